import type { Server } from 'node:http';
import { expect } from 'chai';
import type { ConfigPlan } from '@telemetry/contract';
import { createExpressApp, errorHandler } from '@telemetry/platform';
import type { AuditRecord, Auditor } from '../../services/query-service/src/access/audit.js';
import { configRoutes } from '../../services/query-service/src/config-as-code/config.route.js';
import type { ConfigEngine } from '../../services/query-service/src/config-as-code/engine.js';
import { LineLogger, silentLogger } from './support/fakes.js';

/**
 * The configuration routes (config.route.ts) over a fake engine and auditor: what they
 * answer and record around the engine, not the engine itself (config-engine.test.ts).
 */
describe('configuration routes (unit, fake engine)', () => {
  let server: Server;
  let base = '';
  const recorded: string[] = [];
  let auditFails = false;
  let limited = false;
  const logged = new LineLogger();
  const plan = (applied: boolean): ConfigPlan => ({
    applied,
    changes: [{ kind: 'monitor', key: 'api', action: 'create', id: 'mon_0000000000000001', fields: ['name'] }],
    summary: { create: 1, update: 0, delete: 0, unchanged: 0 },
  });
  const engine = {
    apply: (_t: string, _b: unknown, o: { dryRun: boolean }) => Promise.resolve(plan(!o.dryRun)),
    export: () => Promise.resolve({ document: { version: 1 }, unmanaged: {} }),
    adopt: () => Promise.resolve([]),
  } as unknown as ConfigEngine;
  const audit: Auditor = {
    record: (_req, _res, r: AuditRecord) => {
      recorded.push(r.action);
      return auditFails ? Promise.reject(new Error('audit topic unavailable')) : Promise.resolve();
    },
    denied: () => Promise.resolve(),
  };

  before(async () => {
    const app = createExpressApp();
    app.use((_req, res, next) => {
      res.locals.key = { tenantId: 'ten_a', monitorIds: new Set(limited ? ['mon_only'] : []) };
      next();
    });
    configRoutes(app, { engine, auth: { read: [], write: [] }, audit, logger: logged.logger });
    app.use(errorHandler(silentLogger));
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    recorded.length = 0;
    auditFails = false;
    limited = false;
  });

  const post = (query: string) =>
    fetch(`${base}/api/config${query}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ version: 1 }),
    });

  it('answers a committed apply 200 even when its audit entry cannot be written, and logs that', async () => {
    auditFails = true;
    const res = await post('');
    expect(res.status).to.equal(200);
    expect(((await res.json()) as { data: ConfigPlan }).data).to.deep.equal(plan(true));
    expect(recorded).to.deep.equal(['config.apply']);
    expect(logged.entries().map((e) => e.msg ?? e.message)).to.include('the config.apply audit entry was not written');
  });

  it('records a dry run as config.plan, an apply as config.apply', async () => {
    expect((await post('?dry_run=true')).status).to.equal(200);
    expect((await post('')).status).to.equal(200);
    expect(recorded).to.deep.equal(['config.plan', 'config.apply']);
  });

  it('refuses a key limited to some monitors on every route, reading too', async () => {
    limited = true;
    for (const res of [await fetch(`${base}/api/config`), await post('?dry_run=true')]) {
      expect(res.status).to.equal(403);
      expect(((await res.json()) as { code: string }).code).to.equal('MONITOR_NOT_ALLOWED');
    }
    expect(recorded).to.deep.equal([]);
  });
});
