import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { stringify } from 'yaml';
import type { ConfigPlan } from '@telemetry/contract';
import { createTenant } from '@telemetry/store';
import { adminRegistry, eventually, newKey, runQuery, uid, type Running } from '../support/fixtures.js';
import { apiClient } from '../support/api.js';

/** The built CLI, run as a user runs it (npx telemetry → this launcher → dist/main.js). */
const BIN = resolve('cli/bin/telemetry.js');

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * telemetry.yaml applied to the real query service and PostgreSQL through the built CLI
 * (docs/as-code.md), as issue 47's "Done when" says: apply creates, a second apply changes
 * nothing, one edit is exactly one change, export then plan is no change, prune deletes
 * only what left the file, and one invalid monitor among five changes nothing.
 */
describe('telemetry CLI against the query service (real PostgreSQL)', function () {
  this.timeout(120_000);
  let query: Running;
  let key = '';
  let dir = '';
  const slug = uid('status');
  const api = apiClient(
    () => query.url,
    () => key,
  );
  // The secrets, from the environment (never in the file).
  const SECRETS = {
    OPS_HOOK_URL: 'http://127.0.0.1:9/ops-hook',
    OPS_HOOK_SECRET: 'whsec-0123456789abcdef0123456789',
    API_TOKEN: 'Bearer e2e-token-1',
  };

  /** Runs the built CLI in the test's directory with only the environment given (and PATH). */
  function telemetry(args: string[], env: Record<string, string> = {}): Promise<Ran> {
    return new Promise((done, fail) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', TELEMETRY_URL: query.url, TELEMETRY_API_KEY: key, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('error', fail);
      child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
    });
  }
  const json = <T>(r: Ran): T => JSON.parse(r.stdout) as T;
  const planOf = (r: Ran): ConfigPlan => {
    expect(r.stderr, r.stdout).to.equal('');
    return json<{ plan: ConfigPlan }>(r).plan;
  };
  const brief = (p: ConfigPlan): string[] =>
    p.changes.map((c) => `${c.action} ${c.kind} ${c.key}${c.fields.length ? ` ${c.fields.join(',')}` : ''}`);

  /** Five monitors, two channels, an escalation-free status page: the file's first version. */
  const monitor = (n: number, extra: object = {}) => ({
    key: `m${n}`,
    name: `Monitor ${n}`,
    url: `http://127.0.0.1:9/m${n}`,
    interval_seconds: 60,
    paused: true,
    ...extra,
  });
  const file = () => ({
    version: 1,
    channels: [
      {
        key: 'ops-hook',
        type: 'webhook',
        name: 'Ops webhook',
        config: { url: { env: 'OPS_HOOK_URL' }, secret: { env: 'OPS_HOOK_SECRET' } },
      },
      { key: 'ops-mail', type: 'email', name: 'Ops mail', config: { to: ['ops@example.com'] } },
    ],
    monitors: [
      monitor(1, { channels: ['ops-hook', 'ops-mail'], headers: { Authorization: { env: 'API_TOKEN' } } }),
      monitor(2, { channels: ['ops-mail'] }),
      monitor(3),
      monitor(4, { type: 'tcp', url: 'tcp://127.0.0.1:9' }),
      monitor(5),
    ],
    status_pages: [{ key: 'public', slug, title: 'Our status', monitor_ids: ['m1', 'm2'] }],
  });
  const write = (name: string, doc: object): string => {
    writeFileSync(join(dir, name), stringify(doc));
    return name;
  };

  before(async () => {
    expect(existsSync(resolve('cli/dist/main.js')), 'build the CLI first: npx tsc -b').to.equal(true);
    dir = mkdtempSync(join(tmpdir(), 'as-code-'));
    // A tenant of its own: prune deletes the tenant's managed objects the file does not have.
    const tenantId = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    key = await newKey({
      tenantId,
      kind: 'api',
      name: 'as code',
      scopes: ['monitors:read', 'monitors:write', 'channels:read', 'channels:write'],
    });
    query = await runQuery();
    await eventually('key loaded', async () => ((await api('GET', '/api/monitors')).status === 200 ? true : undefined));
  });

  after(async () => {
    await query?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The tenant's monitors by key (null: not managed), name and interval. */
  async function monitors(): Promise<{ key: string | null; name: string; interval_seconds: number }[]> {
    const r = await api<{ key: string | null; name: string; interval_seconds: number }[]>('GET', '/api/monitors');
    expect(r.status, r.text).to.equal(200);
    return r.body.data
      .map(({ key, name, interval_seconds }) => ({ key, name, interval_seconds }))
      .sort((a, b) => (a.key ?? '').localeCompare(b.key ?? '') || a.name.localeCompare(b.name));
  }

  it('apply creates five monitors, two channels and a status page; a second apply changes nothing', async () => {
    write('telemetry.yaml', file());
    const valid = await telemetry(['validate'], SECRETS);
    expect(valid.code, valid.stderr).to.equal(0);

    const first = await telemetry(['apply', '--auto-approve', '--json'], SECRETS);
    expect(first.code, first.stdout + first.stderr).to.equal(0);
    const applied = planOf(first);
    expect(applied.applied).to.equal(true);
    expect(applied.summary).to.deep.equal({ create: 8, update: 0, delete: 0, unchanged: 0 });
    expect(applied.changes.map((c) => `${c.action} ${c.kind} ${c.key}`)).to.have.members([
      'create channel ops-hook',
      'create channel ops-mail',
      'create monitor m1',
      'create monitor m2',
      'create monitor m3',
      'create monitor m4',
      'create monitor m5',
      'create status_page public',
    ]);

    expect((await monitors()).map((m) => m.key)).to.deep.equal(['m1', 'm2', 'm3', 'm4', 'm5']);
    const channels = await api<{ key: string; id: string }[]>('GET', '/api/channels');
    expect(channels.body.data.map((c) => c.key).sort()).to.deep.equal(['ops-hook', 'ops-mail']);
    const page = await api<{ key: string; monitor_ids: string[] }>('GET', `/api/status-pages/${slug}`);
    expect(page.status, page.text).to.equal(200);
    expect(page.body.data.key).to.equal('public');
    expect(page.body.data.monitor_ids).to.have.length(2);
    // The secret went from the environment to the server, and is not shown back.
    const mon1 = (await api<{ key: string; headers: Record<string, string> }[]>('GET', '/api/monitors')).body.data.find(
      (m) => m.key === 'm1',
    )!;
    expect(mon1.headers).to.have.property('Authorization').that.does.not.contain('e2e-token');

    const second = await telemetry(['apply', '--auto-approve', '--json'], SECRETS);
    expect(second.code).to.equal(0);
    expect(planOf(second).changes).to.deep.equal([]);
    expect(planOf(second).summary).to.deep.equal({ create: 0, update: 0, delete: 0, unchanged: 8 });
    const human = await telemetry(['apply', '--auto-approve'], SECRETS);
    expect(human.stdout).to.contain('No changes');
  });

  it('editing one monitor: plan shows exactly that change, and --detailed-exitcode exits 2', async () => {
    const edited = file();
    edited.monitors[1]!.interval_seconds = 120;
    write('telemetry.yaml', edited);
    const plan = await telemetry(['plan', '--detailed-exitcode'], SECRETS);
    expect(plan.code, plan.stderr).to.equal(2);
    expect(plan.stdout.split('\n').filter((l) => /^[+~-] /.test(l))).to.deep.equal(['~ monitor m2 (interval_seconds)']);
    expect(plan.stdout).to.contain('Plan: 0 to create, 1 to change, 0 to delete, 7 unchanged.');
    const asJson = await telemetry(['plan', '--json'], SECRETS);
    expect(brief(planOf(asJson))).to.deep.equal(['update monitor m2 interval_seconds']);
    // a plan writes nothing
    expect((await monitors()).find((m) => m.key === 'm2')!.interval_seconds).to.equal(60);

    const apply = await telemetry(['apply', '--auto-approve'], SECRETS);
    expect(apply.code, apply.stderr).to.equal(0);
    expect((await monitors()).find((m) => m.key === 'm2')!.interval_seconds).to.equal(120);
    expect((await telemetry(['plan', '--detailed-exitcode'], SECRETS)).code).to.equal(0);
  });

  it('export, then plan of the exported file with no secret set: no change', async () => {
    const exported = await telemetry(['export', '-o', 'exported.yaml']);
    expect(exported.code, exported.stderr).to.equal(0);
    const text = readFileSync(join(dir, 'exported.yaml'), 'utf8');
    // secrets as variables with the stored values' fingerprints, never the values
    expect(text).to.contain('TELEMETRY_MONITORS_M1_HEADERS_AUTHORIZATION');
    expect(text).to.contain('TELEMETRY_CHANNELS_OPS_HOOK_CONFIG_URL');
    expect(text).to.match(/fingerprint: fp1\./);
    for (const value of Object.values(SECRETS)) expect(text).not.to.contain(value);

    const plan = await telemetry(['plan', '--detailed-exitcode', '-f', 'exported.yaml']);
    expect(plan.code, plan.stdout + plan.stderr).to.equal(0);
    expect(plan.stdout).to.contain('No changes');
    const asJson = await telemetry(['plan', '--json', '-f', 'exported.yaml']);
    expect(planOf(asJson).summary).to.deep.equal({ create: 0, update: 0, delete: 0, unchanged: 8 });
  });

  it('apply --prune after removing a monitor deletes that one only (not an object without a key)', async () => {
    const unkeyed = await api('POST', '/api/monitors', {
      name: 'Made by hand',
      url: 'http://127.0.0.1:9/by-hand',
      paused: true,
    });
    expect(unkeyed.status, unkeyed.text).to.equal(201);
    const without = file();
    without.monitors[1]!.interval_seconds = 120;
    without.monitors.pop(); // m5
    write('telemetry.yaml', without);

    // without --prune the monitor stays
    const kept = await telemetry(['plan', '--json'], SECRETS);
    expect(planOf(kept).changes).to.deep.equal([]);

    const pruned = await telemetry(['apply', '--prune', '--auto-approve', '--json'], SECRETS);
    expect(pruned.code, pruned.stdout + pruned.stderr).to.equal(0);
    expect(brief(planOf(pruned))).to.deep.equal(['delete monitor m5']);
    expect((await monitors()).map((m) => m.key)).to.deep.equal([null, 'm1', 'm2', 'm3', 'm4']);
    const channels = await api<{ key: string }[]>('GET', '/api/channels');
    expect(channels.body.data).to.have.length(2);
    expect((await api('GET', `/api/status-pages/${slug}`)).status).to.equal(200);
  });

  it('a file with one invalid monitor among five changes nothing, and says where it is', async () => {
    const before = await monitors();
    const bad = file();
    bad.monitors = bad.monitors.map((m, i) => ({ ...m, name: `Renamed ${i + 1}` }));
    // m3: a GET check sends no body (the server's rule, not the schema's)
    Object.assign(bad.monitors[2]!, { body: 'not for a GET' });
    write('invalid.yaml', bad);
    expect((await telemetry(['validate', '-f', 'invalid.yaml'], SECRETS)).code).to.equal(0);
    const line = readFileSync(join(dir, 'invalid.yaml'), 'utf8')
      .split('\n')
      .findIndex((l) => l.includes('body: not for a GET'));
    const column = readFileSync(join(dir, 'invalid.yaml'), 'utf8').split('\n')[line]!.indexOf('not for a GET') + 1;

    const apply = await telemetry(['apply', '--auto-approve', '--prune', '-f', 'invalid.yaml'], SECRETS);
    expect(apply.code).to.equal(1);
    expect(apply.stderr).to.contain(`invalid.yaml:${line + 1}:${column}: monitors[2].body: `);
    expect(apply.stderr).to.contain('VALIDATION_FAILED');
    expect(await monitors()).to.deep.equal(before);

    const asJson = await telemetry(['plan', '--json', '-f', 'invalid.yaml'], SECRETS);
    expect(asJson.code).to.equal(1);
    const out = json<{ ok: boolean; problems: { line: number; column: number; path: string }[] }>(asJson);
    expect(out.ok).to.equal(false);
    expect(out.problems).to.have.length(1);
    expect(out.problems[0]).to.deep.include({ line: line + 1, column, path: '/monitors/2/body' });
  });

  it('export --adopt gives the monitor made by hand a key, and the file then describes the tenant', async () => {
    const r = await telemetry(['export', '--adopt', '--json', '-o', 'adopted.yaml']);
    expect(r.code, r.stdout + r.stderr).to.equal(0);
    const out = json<{ adopted: { kind: string; key: string }[]; unmanaged: Record<string, number> }>(r);
    expect(out.adopted.map((a) => `${a.kind} ${a.key}`)).to.deep.equal(['monitor made-by-hand']);
    expect(Object.values(out.unmanaged).every((n) => n === 0)).to.equal(true);
    expect(readFileSync(join(dir, 'adopted.yaml'), 'utf8')).to.contain('key: made-by-hand');
    const plan = await telemetry(['plan', '--prune', '--detailed-exitcode', '-f', 'adopted.yaml']);
    expect(plan.code, plan.stdout + plan.stderr).to.equal(0);
    expect((await monitors()).map((m) => m.key)).to.deep.equal(['m1', 'm2', 'm3', 'm4', 'made-by-hand']);
  });

  it('refuses a wrong key without printing it', async () => {
    const r = await telemetry(['plan'], { ...SECRETS, TELEMETRY_API_KEY: 'tk_wrong_secret_value_123' });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('INVALID_CREDENTIALS');
    expect(r.stdout + r.stderr).not.to.contain('tk_wrong_secret_value_123');
  });
});
