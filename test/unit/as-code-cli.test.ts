import { createServer, type IncomingMessage, type Server } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import {
  envNameOf,
  parseYaml,
  problemAt,
  resolveSecrets,
  run,
  secretPatterns,
  telemetryFileSchema,
  type Io,
} from '@telemetry/cli';
import type { ConfigPlan } from '@telemetry/contract';

const FIXTURES = 'test/fixtures/as-code';
const fixture = (name: string): string => join(FIXTURES, name);

/** The env the good file needs. */
const GOOD_ENV = {
  SLACK_WEBHOOK_URL: 'http://127.0.0.1:9/services/T0/B0/secret-path',
  OPS_HOOK_URL: 'http://127.0.0.1:9/hook',
  API_TOKEN: 'Bearer token-value-1',
};

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(args: string[], env: Record<string, string> = {}, ask?: Io['ask']): Promise<Ran> {
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
    env,
    ...(ask ? { ask } : {}),
  });
  return { code, stdout, stderr };
}

/** The problem lines of a run (file:line:col: …), without the closing summary. */
const problemLines = (r: Ran): string[] => r.stderr.split('\n').filter((l) => /^[^:\s]+:\d+:\d+: /.test(l));

describe('telemetry CLI: validate (unit)', () => {
  it('passes a good file: every section, references by key, secrets from the environment', async () => {
    const r = await cli(['validate', '-f', fixture('good.yaml')], GOOD_ENV);
    expect(r.stderr).to.equal('');
    expect(r.code).to.equal(0);
    expect(r.stdout).to.contain('valid (2 channels, 1 escalation policy, 2 monitors, 1 status page)');
  });

  // Each bad file: every problem, at its line and column (not only the first), exit 1.
  const BAD: [file: string, env: Record<string, string>, lines: string[]][] = [
    [
      'unknown-keys.yaml',
      { PD_ROUTING_KEY: 'x' },
      [
        '8:7: channels[0].config.sevrity: unknown key "sevrity"; did you mean "severity"?',
        '13:5: monitors[0].intervall_seconds: unknown key "intervall_seconds"; did you mean "interval_seconds"?',
        '14:1: monitor: unknown key "monitor"; did you mean "monitors"?',
      ],
    ],
    [
      'wrong-types.yaml',
      {},
      [
        '1:10: version: must be 1',
        '6:23: monitors[0].interval_seconds: must be an integer',
        '7:13: monitors[0].paused: must be a boolean',
        '8:15: monitors[0].channels: must be an array',
        '9:11: monitors[0].type: must be one of: http, tcp, tls, dns, heartbeat, api_flow, browser, icmp',
        '10:10: monitors[1].key: must be a key: 1 to 63 of a-z, 0-9, ".", "_", "-", starting with a letter or digit',
        '11:11: monitors[1].name: must be a string',
      ],
    ],
    [
      'duplicates.yaml',
      {},
      [
        '8:5: monitors[1].name: duplicate key "name" (first at line 7, column 5)',
        '10:10: monitors[2].key: duplicate monitor key "web" (first at line 3, column 10)',
      ],
    ],
    [
      'inline-secrets.yaml',
      {},
      [
        '7:12: channels[0].config.url: a secret is never written in the file: name the environment variable holding it, {env: NAME}',
        '11:10: monitors[0].url: this URL carries credentials: give the whole URL in an environment variable, {env: NAME}, not in the file',
        '13:22: monitors[0].headers.Authorization: a secret is never written in the file: name the environment variable holding it, {env: NAME}',
        '14:21: monitors[0].webhook_secret: a secret is never written in the file: name the environment variable holding it, {env: NAME}',
      ],
    ],
    [
      // the second header has a fingerprint: unset, it keeps the stored value, and is no problem
      'unset-env.yaml',
      {},
      [
        "7:29: monitors[0].headers.Authorization.env: environment variable TELEMETRY_TEST_UNSET_TOKEN is not set (set it, or add the stored value's fingerprint: telemetry export writes it)",
      ],
    ],
    [
      'missing-references.yaml',
      {},
      [
        '12:25: escalation_policies[0].steps[0].channels[1]: there is no channel with key "pager" in channels',
        '17:21: monitors[0].channels[1]: there is no channel with key "nope" in channels',
        '18:24: monitors[0].escalation_policy: there is no escalation policy with key "day" in escalation_policies',
        '23:24: status_pages[0].monitor_ids[1]: there is no monitor with key "gone" in monitors',
      ],
    ],
    ['not-yaml.yaml', {}, ['5:5: Flow sequence in block collection must be sufficiently indented and end with a ]']],
  ];
  for (const [file, env, lines] of BAD) {
    it(`reports every problem of ${file} at its line and column, and exits 1`, async () => {
      const r = await cli(['validate', '-f', fixture(file)], env);
      expect(r.code).to.equal(1);
      expect(problemLines(r)).to.deep.equal(lines.map((l) => `${fixture(file)}:${l}`));
      expect(r.stdout).to.equal('');
    });
  }

  it('reads anchors and merge keys (an x- key holds them and is not sent); refuses an empty file', async () => {
    const y = parseYaml('f.yaml', readFileSync(fixture('anchors.yaml'), 'utf8')).parsed!;
    expect((await cli(['validate', '-f', fixture('anchors.yaml')])).code).to.equal(0);
    const doc = resolveSecrets(y.data, {});
    expect(Object.keys(doc)).to.deep.equal(['version', 'monitors']);
    expect(doc.monitors!.map((m) => [m.key, m.interval_seconds, m.paused])).to.deep.equal([
      ['a', 120, true],
      ['b', 30, true],
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'telemetry-cli-'));
    writeFileSync(join(dir, 'empty.yaml'), '# nothing yet\n');
    const empty = await cli(['validate', '-f', join(dir, 'empty.yaml')]);
    rmSync(dir, { recursive: true });
    expect(empty.code).to.equal(1);
    expect(problemLines(empty)).to.deep.equal([
      `${join(dir, 'empty.yaml')}:1:1: the file is empty: it needs at least version: 1`,
    ]);
  });

  it('--json: one object on stdout with each problem, its line and column', async () => {
    const r = await cli(['validate', '--json', '-f', fixture('duplicates.yaml')]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal('');
    const out = JSON.parse(r.stdout) as { ok: boolean; problems: { line: number; column: number; path: string }[] };
    expect(out.ok).to.equal(false);
    expect(out.problems.map((p) => [p.line, p.column, p.path])).to.deep.equal([
      [8, 5, '/monitors/1/name'],
      [10, 10, '/monitors/2/key'],
    ]);
    const good = await cli(['validate', '--json', '-f', fixture('good.yaml')], GOOD_ENV);
    expect(good.code).to.equal(0);
    expect(JSON.parse(good.stdout)).to.deep.include({ ok: true, command: 'validate', problems: [] });
  });

  it('refuses a missing file, an unknown command and an option of another command', async () => {
    expect((await cli(['validate', '-f', fixture('no-such.yaml')])).stderr).to.contain('ENOENT');
    const unknown = await cli(['frobnicate']);
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.contain('unknown command "frobnicate"');
    const wrong = await cli(['validate', '--prune']);
    expect(wrong.code).to.equal(1);
    expect(wrong.stderr).to.contain('--prune is not an option of validate');
  });

  it('maps a server problem (a JSON pointer) to the line and column of its node, or of its object when left out', () => {
    const text = readFileSync(fixture('one-invalid-of-five.yaml'), 'utf8');
    const y = parseYaml('f.yaml', text).parsed!;
    expect(problemAt(y, '/monitors/2/body', 'x')).to.deep.include({ line: 13, column: 11 });
    // a field the item leaves out: where the item is
    expect(problemAt(y, '/monitors/2/interval_seconds', 'x')).to.deep.include({ line: 10, column: 5 });
  });

  it('resolves {env}: the variable’s value, or a SecretPin when unset with a fingerprint', () => {
    const y = parseYaml('f.yaml', readFileSync(fixture('good.yaml'), 'utf8')).parsed!;
    const doc = resolveSecrets(y.data, GOOD_ENV);
    expect(doc.monitors![0]!.headers).to.deep.equal({ Authorization: GOOD_ENV.API_TOKEN });
    expect(doc.channels![1]!.config).to.deep.equal({
      url: GOOD_ENV.OPS_HOOK_URL,
      secret: { fingerprint: 'fp1.k1.abcdefghijklmnopqrstuv' },
    });
    expect(doc.channels![0]!.config).to.deep.equal({ url: GOOD_ENV.SLACK_WEBHOOK_URL });
  });

  it('the schema wants {env} at each secret position of each kind', () => {
    const schema = telemetryFileSchema() as { definitions: Record<string, { properties: Record<string, unknown> }> };
    const monitor = schema.definitions.monitor!.properties;
    expect(monitor.webhook_secret).to.deep.equal({ $ref: '#/definitions/secret' });
    expect(monitor.headers).to.deep.include({ additionalProperties: { $ref: '#/definitions/secret' } });
    expect(monitor.url).to.have.property('anyOf');
    expect(secretPatterns('channels', { type: 'email' })).to.deep.equal([{ at: '/config/smtp/url', optional: false }]);
    expect(schema.definitions.status_page!.properties.monitor_ids).to.deep.include({
      items: { $ref: '#/definitions/key', description: 'the key of a monitor (monitors)' },
    });
  });
});

/** A stand-in for the query service's /api/config (the real one: test/e2e/as-code.int.test.ts). */
describe('telemetry CLI: plan, apply, export against a stand-in API (unit)', () => {
  const KEY = 'tk_unit_secret_key_value';
  let server: Server;
  let url = '';
  const requests: { method: string; path: string; auth: string | undefined; body: unknown }[] = [];
  let answer: (req: { method: string; path: string; body: unknown }) => [number, unknown] = () => [500, {}];
  let dir = '';

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'telemetry-cli-'));
    server = createServer((req: IncomingMessage, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        const body = text ? (JSON.parse(text) as unknown) : undefined;
        const r = { method: req.method!, path: req.url!, body };
        requests.push({ ...r, auth: req.headers.authorization });
        const [status, json] = answer(r);
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => (requests.length = 0));

  const env = (): Record<string, string> => ({ ...GOOD_ENV, TELEMETRY_URL: url, TELEMETRY_API_KEY: KEY });
  const plan = (changes: ConfigPlan['changes'], applied = false): ConfigPlan => ({
    applied,
    changes,
    summary: {
      create: changes.filter((c) => c.action === 'create').length,
      update: changes.filter((c) => c.action === 'update').length,
      delete: changes.filter((c) => c.action === 'delete').length,
      unchanged: 3,
    },
  });
  const CHANGES: ConfigPlan['changes'] = [
    { kind: 'monitor', key: 'api-health', action: 'create', id: 'mon_1', fields: ['name', 'url'] },
    { kind: 'monitor', key: 'web', action: 'update', id: 'mon_2', fields: ['interval_seconds', 'url'] },
    { kind: 'monitor', key: 'old', action: 'delete', id: 'mon_3', fields: [] },
  ];

  it('plan: posts the resolved document as a dry run with the key, prints each change and a summary', async () => {
    answer = (r) => [200, { success: true, data: plan(CHANGES, !r.path.includes('dry_run=true')) }];
    const r = await cli(['plan', '-f', fixture('good.yaml'), '--prune'], env());
    expect(r.code).to.equal(0);
    expect(r.stdout.split('\n')).to.include.members([
      '+ monitor api-health',
      '~ monitor web (interval_seconds, url)',
      '- monitor old',
      'Plan: 1 to create, 1 to change, 1 to delete, 3 unchanged.',
    ]);
    expect(requests).to.have.length(1);
    expect(requests[0]).to.deep.include({ method: 'POST', path: '/api/config?dry_run=true&prune=true' });
    expect(requests[0]!.auth).to.equal(`Bearer ${KEY}`);
    const body = requests[0]!.body as { monitors: { headers?: object }[] };
    expect(body.monitors[0]!.headers).to.deep.equal({ Authorization: GOOD_ENV.API_TOKEN });
    expect(r.stdout + r.stderr).not.to.contain(KEY);

    const detailed = await cli(['plan', '-f', fixture('good.yaml'), '--detailed-exitcode'], env());
    expect(detailed.code).to.equal(2);
    expect(requests[1]!.path).to.equal('/api/config?dry_run=true&prune=false');

    answer = () => [200, { success: true, data: plan([]) }];
    const none = await cli(['plan', '-f', fixture('good.yaml'), '--detailed-exitcode'], env());
    expect(none.code).to.equal(0);
    expect(none.stdout).to.contain('No changes');
  });

  it('plan --json: one object with the plan; a refusal maps the server’s problems to lines and columns', async () => {
    answer = () => [200, { success: true, data: plan(CHANGES) }];
    const r = await cli(['plan', '--json', '-f', fixture('good.yaml')], env());
    expect(JSON.parse(r.stdout)).to.deep.include({ ok: true, command: 'plan', changed: true, plan: plan(CHANGES) });

    answer = () => [
      400,
      {
        success: false,
        code: 'VALIDATION_FAILED',
        error: 'the document has 1 problem',
        details: { problems: [{ path: '/monitors/2/body', message: 'GET and HEAD checks send no body' }] },
      },
    ];
    const refused = await cli(['apply', '--auto-approve', '-f', fixture('one-invalid-of-five.yaml')], env());
    expect(refused.code).to.equal(1);
    expect(problemLines(refused)).to.deep.equal([
      `${fixture('one-invalid-of-five.yaml')}:13:11: monitors[2].body: GET and HEAD checks send no body`,
    ]);
    expect(refused.stderr).to.contain('VALIDATION_FAILED').and.contain('nothing was changed');
    const json = await cli(['plan', '--json', '-f', fixture('one-invalid-of-five.yaml')], env());
    const out = JSON.parse(json.stdout) as { ok: boolean; error: { code: string }; problems: object[] };
    expect(out.ok).to.equal(false);
    expect(out.error.code).to.equal('VALIDATION_FAILED');
    expect(out.problems[0]).to.deep.include({ line: 13, column: 11, path: '/monitors/2/body' });
  });

  it('apply: without a terminal it needs --auto-approve; with a "yes" it applies what it showed', async () => {
    answer = (r) => [200, { success: true, data: plan(CHANGES, !r.path.includes('dry_run=true')) }];
    const refused = await cli(['apply', '-f', fixture('good.yaml')], env());
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.contain('--auto-approve');
    expect(requests.map((q) => q.path)).to.deep.equal(['/api/config?dry_run=true&prune=false']);

    requests.length = 0;
    const asked: string[] = [];
    const yes = await cli(['apply', '-f', fixture('good.yaml')], env(), (q) => {
      asked.push(q);
      return Promise.resolve('yes');
    });
    expect(yes.code).to.equal(0);
    expect(asked).to.have.length(1);
    expect(requests.map((q) => q.path)).to.deep.equal([
      '/api/config?dry_run=true&prune=false',
      '/api/config?dry_run=false&prune=false',
    ]);
    expect(yes.stdout).to.contain('Applied: 1 created, 1 changed, 1 deleted, 3 unchanged.');

    requests.length = 0;
    const no = await cli(['apply', '-f', fixture('good.yaml')], env(), () => Promise.resolve('no'));
    expect(no.code).to.equal(1);
    expect(requests).to.have.length(1);
  });

  it('says what is missing: no URL, no key, an unreachable installation', async () => {
    expect((await cli(['plan', '-f', fixture('good.yaml')], GOOD_ENV)).stderr).to.contain('TELEMETRY_URL');
    expect((await cli(['plan', '-f', fixture('good.yaml')], { ...GOOD_ENV, TELEMETRY_URL: url })).stderr).to.contain(
      'TELEMETRY_API_KEY',
    );
    const keyFile = join(dir, 'key');
    writeFileSync(keyFile, `${KEY}\n`);
    answer = () => [200, { success: true, data: plan([]) }];
    const fromFile = await cli(['plan', '-f', fixture('good.yaml'), '--url', url, '--api-key-file', keyFile], GOOD_ENV);
    expect(fromFile.code).to.equal(0);
    expect(requests.at(-1)!.auth).to.equal(`Bearer ${KEY}`);
    const down = await cli(['plan', '-f', fixture('good.yaml'), '--url', 'http://127.0.0.1:9'], {
      ...GOOD_ENV,
      TELEMETRY_API_KEY: KEY,
    });
    expect(down.code).to.equal(1);
    expect(down.stderr).to.contain('cannot reach http://127.0.0.1:9').and.not.contain(KEY);
  });

  it('export: secrets as {env: TELEMETRY_…, fingerprint}, listed in a comment; the file plans with them unset', async () => {
    const fp = 'fp1.k1.abcdefghijklmnopqrstuv';
    answer = (r) =>
      r.path === '/api/config/adopt'
        ? [200, { success: true, data: { adopted: [{ kind: 'monitor', id: 'mon_9', key: 'web' }] } }]
        : [
            200,
            {
              success: true,
              data: {
                document: {
                  version: 1,
                  channels: [{ key: 'ops', type: 'slack', name: 'Ops', config: { url: { fingerprint: fp } } }],
                  monitors: [
                    {
                      key: 'web',
                      name: 'Web',
                      url: 'http://127.0.0.1:8080/',
                      headers: { 'X-Api-Key': { fingerprint: fp } },
                      channels: ['ops'],
                    },
                  ],
                },
                unmanaged: { monitors: 2, channels: 0 },
              },
            },
          ];
    const out = join(dir, 'exported.yaml');
    const r = await cli(['export', '--adopt', '-o', out], { TELEMETRY_URL: url, TELEMETRY_API_KEY: KEY });
    expect(r.code).to.equal(0);
    expect(requests.map((q) => `${q.method} ${q.path}`)).to.deep.equal(['POST /api/config/adopt', 'GET /api/config']);
    const text = readFileSync(out, 'utf8');
    const env = envNameOf('monitors', 'web', '/headers/X-Api-Key');
    expect(env).to.equal('TELEMETRY_MONITORS_WEB_HEADERS_X_API_KEY');
    expect(text).to.contain(`#   ${env}  (monitors[0].headers.X-Api-Key)`);
    expect(text).to.contain('#   TELEMETRY_CHANNELS_OPS_CONFIG_URL');
    expect(text).to.contain('2 monitors');
    expect(parse(text)).to.deep.equal({
      version: 1,
      channels: [
        {
          key: 'ops',
          type: 'slack',
          name: 'Ops',
          config: { url: { env: 'TELEMETRY_CHANNELS_OPS_CONFIG_URL', fingerprint: fp } },
        },
      ],
      monitors: [
        {
          key: 'web',
          name: 'Web',
          url: 'http://127.0.0.1:8080/',
          headers: { 'X-Api-Key': { env, fingerprint: fp } },
          channels: ['ops'],
        },
      ],
    });
    // valid offline with no variable set: each fingerprint keeps its stored secret
    const valid = await cli(['validate', '-f', out]);
    expect(valid.stderr).to.equal('');
    expect(valid.code).to.equal(0);

    const json = await cli(['export', '--json'], { TELEMETRY_URL: url, TELEMETRY_API_KEY: KEY });
    const parsed = JSON.parse(json.stdout) as { ok: boolean; yaml: string; env: string[] };
    expect(parsed.ok).to.equal(true);
    expect(parsed.env).to.deep.equal(['TELEMETRY_CHANNELS_OPS_CONFIG_URL', env]);
    expect(parsed.yaml).to.equal(text);
  });
});
