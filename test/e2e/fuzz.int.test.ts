import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { writeSection } from '../../harness/report.js';
import { SCOPES } from '@telemetry/contract';
import { createTenant } from '@telemetry/store';
import {
  adminRegistry,
  eventually,
  newKey,
  registerMonitors,
  RELIABILITY_TITLE,
  runGateway,
  runQuery,
  type Running,
} from '../support/fixtures.js';

const run = promisify(execFile);

/**
 * Property-based fuzzing of both services against our own OpenAPI document with
 * schemathesis (PyPI; tools/validators/install.sh installs it). Every check runs except
 * `positive_data_acceptance`: some rules of valid input cannot be written in OpenAPI
 * (a cursor must be one we issued, `to` not before `from`, the pixel's `payload` must be
 * JSON text), so schema-valid input can rightly get a 400. The rest (no 5xx, status codes,
 * content types and bodies as documented, refusal of schema-invalid input, auth that is
 * really checked, 405 for undocumented methods) must pass.
 */
describe('fuzzing against the OpenAPI document (schemathesis, real Kafka and ClickHouse)', function () {
  this.timeout(900_000);
  let gateway: Running;
  let query: Running;
  const figures: { target: string; cases: number; failures: number }[] = [];
  const examples = process.env.FUZZ_EXAMPLES ?? '25';

  before(async () => {
    await run('bash', ['tools/validators/install.sh'], { maxBuffer: 16 * 1024 * 1024 });
    [gateway, query] = await Promise.all([runGateway({ RATE_LIMIT_PER_SECOND: '0' }), runQuery()]);
  });

  after(async () => {
    await Promise.all([gateway?.stop(), query?.stop()]);
    if (figures.length === 0) return;
    const section = `## Fuzzing (schemathesis)\n\nWritten by \`test/e2e/fuzz.int.test.ts\` (part of \`npm test\`, ${examples} examples per operation and phase; set FUZZ_EXAMPLES for more) on ${new Date().toISOString().slice(0, 10)}, against \`docs/openapi.json\` with every check but \`positive_data_acceptance\` (see the test for why).\n\n| service | cases generated | failures |\n|---|---|---|\n${figures.map((f) => `| ${f.target} | ${f.cases} | ${f.failures} |`).join('\n')}`;
    writeSection('RELIABILITY.md', 'fuzz', section, RELIABILITY_TITLE);
  });

  async function fuzz(target: string, url: string, header: string, paths: string): Promise<void> {
    let out = '';
    let code = 0;
    try {
      const r = await run(
        'schemathesis',
        [
          'run',
          'docs/openapi.json',
          '-u',
          url,
          '-H',
          header,
          '--include-path-regex',
          paths,
          // Run once now runs the fuzzer's monitors: with no check runner here it can only answer
          // 504 RUN_TIMEOUT (a 5xx to schemathesis), and a runner would look up the fuzzer's public
          // host names. Its bad input is in the corpus (bad-input/monitor-checks.ts) and
          // test/e2e/run-once.int.test.ts.
          '--exclude-path',
          '/api/monitors/run-once',
          '-n',
          examples,
          '--checks',
          'all',
          '--exclude-checks',
          'positive_data_acceptance',
          '--generation-deterministic',
          '--no-color',
        ],
        { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, SCHEMATHESIS_HOOKS: '' } },
      );
      out = r.stdout + r.stderr;
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; code?: number };
      out = `${e.stdout ?? ''}${e.stderr ?? ''}`;
      code = e.code ?? 1;
    }
    const m = /(\d+) generated/.exec(out);
    const failures = /(\d+) unique failures?/.exec(out);
    figures.push({ target, cases: Number(m?.[1] ?? 0), failures: Number(failures?.[1] ?? (code === 0 ? 0 : -1)) });
    expect(code, out.slice(-6000)).to.equal(0);
    expect(Number(m?.[1] ?? 0), 'cases generated').to.be.greaterThan(50);
  }

  it('finds no 5xx and no answer that contradicts the document on the ingest gateway', async () => {
    const key = await newKey({ kind: 'telemetry', name: 'fuzz' });
    await eventually('key loaded', async () => {
      const r = await fetch(`${gateway.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': key },
        body: '{"events":[{"source":"f","category":"c","payload":{}}]}',
      });
      return r.status === 200 ? true : undefined;
    });
    await fuzz('ingest gateway', gateway.url, `X-Access-Key: ${key}`, '^/(api/telemetry|healthz|readyz|metrics)');
  });

  it('finds no 5xx and no answer that contradicts the document on the query service', async () => {
    const key = await newKey({
      kind: 'api',
      name: 'fuzz',
      scopes: ['checks:read', 'monitors:read', 'monitors:write'],
    });
    await registerMonitors('m');
    await eventually('key loaded', async () =>
      (await fetch(`${query.url}/api/monitors/m/checks`, { headers: { authorization: `Bearer ${key}` } })).status ===
      200
        ? true
        : undefined,
    );
    await fuzz('query service', query.url, `Authorization: Bearer ${key}`, '^/(api/monitors|healthz|readyz|metrics)');
  });

  it('finds no 5xx and no answer that contradicts the document on the alerting routes', async () => {
    const key = await newKey({ kind: 'api', name: 'fuzz alerting', scopes: ['monitors:read', 'monitors:write'] });
    await eventually('key loaded', async () =>
      (await fetch(`${query.url}/api/channels`, { headers: { authorization: `Bearer ${key}` } })).status === 200
        ? true
        : undefined,
    );
    // NOTE: not the test send (/api/channels/{id}/test): a channel the fuzz made could name
    // any address, and tests reach loopback only (its own test uses a loopback receiver).
    await fuzz(
      'query service, alerting',
      query.url,
      `Authorization: Bearer ${key}`,
      '^/(api/channels(?!/[^/]+/test)|api/escalation-policies|api/incidents|ack/)',
    );
  });

  it('finds no 5xx and no answer that contradicts the document on the people routes', async () => {
    const key = await newKey({ kind: 'api', name: 'fuzz people', scopes: [...SCOPES] });
    await eventually('key loaded', async () =>
      (await fetch(`${query.url}/api/members`, { headers: { authorization: `Bearer ${key}` } })).status === 200
        ? true
        : undefined,
    );
    // NOTE: not the sign-in, session, password and SSO routes (/api/session*,
    // /api/password-resets*, /api/me/*, /auth/oidc/*): sign-in failures are throttled per
    // address with growing delays (every later case would be a 429), a reset mails whoever
    // the fuzz names, and the session and account routes take no API key (with one, each
    // case is 401). The bad-input corpus covers them. Invitations are fuzzed: their mail
    // goes to the run's Mailpit.
    await fuzz(
      'query service, people',
      query.url,
      `Authorization: Bearer ${key}`,
      '^/api/(members|invitations|keys|audit|settings)',
    );
  });

  it('finds no 5xx and no answer that contradicts the document on the event-schema routes', async () => {
    // A tenant of its own: whatever schemas the fuzz makes check no other test's events.
    const { tenant_id: tenantId } = await createTenant(adminRegistry(), 'fuzz event schemas');
    const key = await newKey({
      tenantId,
      kind: 'api',
      name: 'fuzz event schemas',
      scopes: ['event_schemas:read', 'event_schemas:write'],
    });
    await eventually('key loaded', async () =>
      (await fetch(`${query.url}/api/event-schemas`, { headers: { authorization: `Bearer ${key}` } })).status === 200
        ? true
        : undefined,
    );
    await fuzz('query service, event schemas', query.url, `Authorization: Bearer ${key}`, '^/api/event-schemas');
  });

  it('finds no 5xx and no answer that contradicts the document on the deletion routes and the events per minute', async () => {
    // A tenant of its own: the deletions the fuzz records suppress ids of no other test.
    const { tenant_id: tenantId } = await createTenant(adminRegistry(), 'fuzz deletions');
    const key = await newKey({
      tenantId,
      kind: 'api',
      name: 'fuzz deletions',
      scopes: ['deletions:read', 'deletions:write', 'events:read'],
    });
    await eventually('key loaded', async () =>
      (await fetch(`${query.url}/api/deletions`, { headers: { authorization: `Bearer ${key}` } })).status === 200
        ? true
        : undefined,
    );
    await fuzz(
      'query service, deletions and events per minute',
      query.url,
      `Authorization: Bearer ${key}`,
      '^/api/(deletions|events/per-minute)',
    );
  });

  it("finds no 5xx and no undocumented answer with another tenant's key on the query service", async () => {
    // The monitors above belong to the default tenant; for this key none of them exists.
    const { tenant_id: tenantId } = await createTenant(adminRegistry(), 'fuzz foreign');
    const key = await newKey({
      tenantId,
      kind: 'api',
      name: 'fuzz foreign',
      scopes: ['checks:read', 'monitors:read', 'monitors:write'],
    });
    await registerMonitors('m');
    await eventually('key loaded; the monitor is not found for it', async () => {
      const r = await fetch(`${query.url}/api/monitors/m/checks`, { headers: { authorization: `Bearer ${key}` } });
      return r.status === 404 ? true : undefined;
    });
    await fuzz(
      'query service, another tenant',
      query.url,
      `Authorization: Bearer ${key}`,
      '^/(api/monitors|healthz|readyz|metrics)',
    );
  });
});
