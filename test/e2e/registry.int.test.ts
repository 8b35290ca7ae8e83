import {
  deletionProbes,
  eventSchemaFixture,
  eventSchemaProbes,
  followerFixtures,
  followerProbes,
  plainProbes,
  type FollowerFixtures,
} from './registry-follower-probes.js';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Monitor, StatusPage } from '@telemetry/contract';
import { createLogger, createPostgres, type PgPool } from '@telemetry/platform';
import {
  ALERTING_TABLES,
  createTenant,
  issueKey,
  MonitorStore,
  parseKey,
  pgIsGranted,
  pgRoleName,
  placeholderMonitor,
  PG_SERVICE_ROLE_NAMES,
  PEOPLE_TABLES,
  REGISTRY_ENTITIES,
  STATUS_FOLLOW_TABLES,
  DELETION_TABLES,
  EVENT_SCHEMA_TABLES,
  revokeKey,
  sqlState,
  StatusPageStore,
  type PgPrivilege,
  type PgServiceRole,
  type RegistryTable,
} from '@telemetry/store';
import { ms, table, writeSection } from '../../harness/report.js';
import { runSecretBox, until } from '../../harness/processes.js';
import {
  adminRegistry,
  apiCall,
  eventually,
  RELIABILITY_TITLE,
  runGateway,
  runQuery,
  testStack,
  uid,
  type ApiAnswer,
  type Envelope,
  type Running,
} from '../support/fixtures.js';

/** How often a replica is asked whether it refuses a revoked credential yet. */
const POLL_MS = 20;
/** What the issue promises: a revocation reaches every replica within this. */
const PROPAGATION_MS = 1000;
/** Rounds of each race. */
const TRIES = 100;

/** A request to a query service, with the answer's ETag. */
async function call<T>(base: string, key: string, method: string, path: string, body?: unknown, headers = {}) {
  const a = await apiCall<T>(base, key, method, path, body, headers);
  return { ...a, etag: a.headers.get('etag') };
}

/** The two answers of a race, winner first (by status), as `status CODE` strings. */
function outcome(answers: readonly ApiAnswer<unknown>[]): string[] {
  return answers.map((a) => `${a.status}${a.body.code ? ` ${a.body.code}` : ''}`).sort();
}

/** When a replica first refused, in ms after the change returned: the refusing request's sending and its answer. */
interface Refusal {
  sent: number;
  answered: number;
}

/** Polls `refused` every POLL_MS (up to 5 s, so a slow replica is measured too) until it holds. */
async function refusedAfter(what: string, since: number, refused: () => Promise<boolean>): Promise<Refusal> {
  return until(
    what,
    async () => {
      const sent = Date.now() - since;
      return (await refused()) ? { sent, answered: Date.now() - since } : undefined;
    },
    5000,
    POLL_MS,
  );
}

/**
 * The registry on PostgreSQL across replicas (issue 38, "Done when"): two query services
 * racing the same If-Match, the same slug and the last monitor of a quota never both
 * succeed; a revoked key, a deleted monitor's heartbeat token and a replaced one are
 * refused on every replica within 1 s, by LISTEN/NOTIFY alone (the periodic catch-up is
 * set to a minute); each service's PostgreSQL role may do exactly what PG_SERVICE_ROLES
 * grants it. The figures go to RELIABILITY.md ("registry").
 */
describe('the registry across replicas (real PostgreSQL)', function () {
  this.timeout(600_000);
  const figures: string[] = [];

  after(() => {
    if (figures.length === 0) return;
    const section = [
      '## The registry across replicas',
      '',
      `Written by \`test/e2e/registry.int.test.ts\` (part of \`npm test\`) on ${new Date().toISOString().slice(0, 10)}: two query services and two gateways on one PostgreSQL registry, \`REGISTRY_CATCH_UP_MS=60000\` (only LISTEN/NOTIFY can bring a change within a second); requests sent with \`fetch\` and \`Promise.all\`, one to each replica at once.`,
      '',
      ...figures,
    ].join('\n');
    writeSection('RELIABILITY.md', 'registry', section, RELIABILITY_TITLE);
  });

  describe('two query services and two gateways', () => {
    const replicas: { query: Running[]; gateways: Running[] } = { query: [], gateways: [] };
    let tenant: string;
    let quotaTenant: string;
    let api: string;
    let quotaApi: string;

    before(async () => {
      const db = adminRegistry();
      tenant = (await createTenant(db, `race ${uid()}`)).tenant_id;
      quotaTenant = (await createTenant(db, `race quota ${uid()}`)).tenant_id;
      const scopes = ['monitors:read', 'monitors:write'];
      api = (await issueKey(db, { tenantId: tenant, kind: 'api', name: 'race', scopes })).key;
      quotaApi = (await issueKey(db, { tenantId: quotaTenant, kind: 'api', name: 'race quota', scopes })).key;
      // A catch-up a minute apart: within the test's second, only a NOTIFY brings a change.
      const env = { REGISTRY_CATCH_UP_MS: '60000', MONITOR_QUOTAS: `${quotaTenant}=2` };
      [replicas.query[0], replicas.query[1], replicas.gateways[0], replicas.gateways[1]] = await Promise.all([
        runQuery(env),
        runQuery(env),
        runGateway(env),
        runGateway(env),
      ]);
    });

    after(async () => {
      await Promise.all([...replicas.query, ...replicas.gateways].map((r) => r.stop()));
    });

    /** Waits until the monitor is known to both query services (each learns it from the feed). */
    const knownToBoth = (key: string, id: string): Promise<boolean> =>
      eventually(`${id} on both query services`, async () => {
        const got = await Promise.all(replicas.query.map((q) => call(q.url, key, 'GET', `/api/monitors/${id}`)));
        return got.every((g) => g.status === 200) ? true : undefined;
      });

    const create = async (key: string, body: object): Promise<Monitor> => {
      const r = await call<Monitor>(replicas.query[0]!.url, key, 'POST', '/api/monitors', body);
      expect(r.status, JSON.stringify(r.body)).to.equal(201);
      await knownToBoth(key, r.body.data.id);
      return r.body.data;
    };

    describe('racing writes: never both succeed', () => {
      const timings: [string, number][] = [];

      after(() => {
        const total = timings.reduce((s, [, t]) => s + t, 0);
        figures.push(
          `### Races (${TRIES} tries each, ${ms(total)} ms for all ${TRIES * timings.length})`,
          '',
          table(
            ['race', 'time', 'per try'],
            timings.map(([what, t]) => [what, `${ms(t)} ms`, `${ms(t / TRIES)} ms`]),
          ),
          '',
        );
      });

      it('the same If-Match on PATCH: exactly one 200, the other 412; the version counts the changes', async () => {
        const m = await create(api, { name: 'race', url: 'http://127.0.0.1:9/', paused: true });
        let etag = '"1"';
        const outcomes: string[] = [];
        let decidedByTheWrite = 0;
        const started = Date.now();
        for (let i = 0; i < TRIES; i++) {
          const answers = await Promise.all(
            replicas.query.map((q, r) =>
              call<Monitor>(
                q.url,
                api,
                'PATCH',
                `/api/monitors/${m.id}`,
                { name: `try ${i} replica ${r}` },
                {
                  'if-match': etag,
                },
              ),
            ),
          );
          outcomes.push(outcome(answers).join(' + '));
          const won = answers.find((a) => a.status === 200);
          if (won?.etag) etag = won.etag;
          // The loser read the winner's version (the If-Match check), or read the same one
          // and lost at the conditional UPDATE: the race reached the database.
          if (answers.some((a) => a.status === 412 && /changed while/.test(a.body.error ?? ''))) decidedByTheWrite++;
        }
        timings.push(['same `If-Match` on `PATCH /api/monitors/{id}`', Date.now() - started]);
        const successes = outcomes.filter((o) => o.startsWith('200')).length;
        expect(countBy(outcomes)).to.deep.equal({ '200 + 412 PRECONDITION_FAILED': TRIES });
        const final = await call<Monitor>(replicas.query[1]!.url, api, 'GET', `/api/monitors/${m.id}`);
        expect(final.etag).to.equal(`"${successes + 1}"`);
        figures.push(
          `If-Match: ${decidedByTheWrite} of ${TRIES} losers read the same version as the winner and lost at the conditional \`UPDATE … WHERE version = $n\` (the others read the winner's version and failed the If-Match check).`,
          '',
        );
      });

      it('the same slug on POST /api/status-pages: exactly one 201, the other 409 SLUG_TAKEN', async () => {
        const m = await create(api, { name: 'race page', url: 'http://127.0.0.1:9/', paused: true });
        const outcomes: string[] = [];
        let racing = 0;
        for (let i = 0; i < TRIES; i++) {
          const slug = uid('race');
          const started = Date.now();
          const answers = await Promise.all(
            replicas.query.map((q) =>
              call<StatusPage>(q.url, api, 'POST', '/api/status-pages', {
                slug,
                title: `race ${i}`,
                monitor_ids: [m.id],
              }),
            ),
          );
          racing += Date.now() - started;
          outcomes.push(outcome(answers).join(' + '));
          // A tenant may have 100 pages: each try's page goes before the next.
          const gone = await call(replicas.query[0]!.url, api, 'DELETE', `/api/status-pages/${slug}`);
          expect(gone.status, JSON.stringify(gone.body)).to.equal(200);
        }
        timings.push(['same slug on `POST /api/status-pages`', racing]);
        expect(countBy(outcomes)).to.deep.equal({ '201 + 409 SLUG_TAKEN': TRIES });
      });

      it('the last monitor of a quota: exactly one 201, the other 403 QUOTA_EXCEEDED', async () => {
        // MONITOR_QUOTAS gives the tenant 2; with one made, there is room for exactly one.
        await create(quotaApi, { name: 'quota first', url: 'http://127.0.0.1:9/', paused: true });
        const outcomes: string[] = [];
        let racing = 0;
        for (let i = 0; i < TRIES; i++) {
          const started = Date.now();
          const answers = await Promise.all(
            replicas.query.map((q, r) =>
              call<Monitor>(q.url, quotaApi, 'POST', '/api/monitors', {
                name: `quota try ${i} replica ${r}`,
                url: 'http://127.0.0.1:9/',
                paused: true,
              }),
            ),
          );
          racing += Date.now() - started;
          outcomes.push(outcome(answers).join(' + '));
          // Room again for the next try: the monitor made goes, through the replica that made it.
          for (const [r, a] of answers.entries()) {
            if (a.status !== 201) continue;
            const gone = await call(replicas.query[r]!.url, quotaApi, 'DELETE', `/api/monitors/${a.body.data.id}`);
            expect(gone.status, JSON.stringify(gone.body)).to.equal(200);
          }
        }
        timings.push(['last monitor of a quota (`POST /api/monitors`)', racing]);
        expect(countBy(outcomes)).to.deep.equal({ '201 + 403 QUOTA_EXCEEDED': TRIES });
        expect(await new MonitorStore(adminRegistry(), runSecretBox()).count(quotaTenant)).to.equal(1);
      });
    });

    describe('revocation reaches every replica within 1 s (LISTEN/NOTIFY; catch-up a minute apart)', () => {
      const rows: [string, string, Refusal][] = [];

      after(() => {
        figures.push(
          `### Revocation: from the change returning until each replica refuses (polled every ${POLL_MS} ms, one request at a time; the test asserts the answer came < ${PROPAGATION_MS} ms)`,
          '',
          table(
            ['change', 'replica', 'first refused request sent after', 'answered after'],
            rows.map(([what, where, t]) => [what, where, `${ms(t.sent)} ms`, `${ms(t.answered)} ms`]),
          ),
          '',
        );
      });

      it('a revoked telemetry key and a revoked API key: refused by both gateways and both query services', async () => {
        const telemetry = (await issueKey(adminRegistry(), { tenantId: tenant, kind: 'telemetry', name: 'revoked' }))
          .key;
        const apiKey = (
          await issueKey(adminRegistry(), { tenantId: tenant, kind: 'api', name: 'revoked', scopes: ['monitors:read'] })
        ).key;
        const event = (g: Running): Promise<Response> =>
          fetch(`${g.url}/api/telemetry/events`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-access-key': telemetry },
            body: JSON.stringify({ events: [{ source: 'registry-test', category: 'revocation', payload: {} }] }),
          });
        const refusedBy = async (r: Promise<Response>): Promise<boolean> => {
          const answer = await r;
          const body = (await answer.json()) as Envelope<unknown>;
          if (answer.status === 200) return false;
          expect([answer.status, body.code]).to.deep.equal([401, 'INVALID_CREDENTIALS']);
          return true;
        };
        await eventually('both keys work on every replica', async () => {
          const got = await Promise.all([
            ...replicas.gateways.map(async (g) => (await event(g)).status),
            ...replicas.query.map(async (q) => (await call(q.url, apiKey, 'GET', '/api/monitors')).status),
          ]);
          return got.every((s) => s === 200) ? true : undefined;
        });

        const [telemetryRevoked, apiRevoked] = await Promise.all([
          revokeKey(adminRegistry(), parseKey(telemetry)!.keyId).then(
            (done) => (expect(done).to.equal(true), Date.now()),
          ),
          revokeKey(adminRegistry(), parseKey(apiKey)!.keyId).then((done) => (expect(done).to.equal(true), Date.now())),
        ]);
        const took = await Promise.all([
          ...replicas.gateways.map((g) =>
            refusedAfter('the telemetry key refused', telemetryRevoked, () => refusedBy(event(g))),
          ),
          ...replicas.query.map((q) =>
            refusedAfter('the API key refused', apiRevoked, () =>
              refusedBy(
                fetch(`${q.url}/api/monitors`, {
                  headers: { authorization: `Bearer ${apiKey}` },
                }),
              ),
            ),
          ),
        ]);
        const where = ['gateway 1', 'gateway 2', 'query service 1', 'query service 2'];
        took.forEach((t, i) => rows.push([i < 2 ? 'telemetry key revoked' : 'API key revoked', where[i]!, t]));
        for (const [i, t] of took.entries()) expect(t.answered, where[i]).to.be.below(PROPAGATION_MS);
      });

      const beat = async (g: Running, token: string): Promise<{ status: number; code?: string }> => {
        const r = await fetch(`${g.url}/api/heartbeats/${token}`, { method: 'POST' });
        return { status: r.status, code: ((await r.json()) as Envelope<null>).code };
      };
      /** The token is refused as no heartbeat monitor's. */
      const refused = async (g: Running, token: string): Promise<boolean> => {
        const r = await beat(g, token);
        if (r.status === 404) return (expect(r.code).to.equal('HEARTBEAT_NOT_FOUND'), true);
        // A known token answers 200, or 429 past the monitor's 10 calls (checked after the token).
        expect([200, 429], JSON.stringify(r)).to.include(r.status);
        return false;
      };

      it("a heartbeat token: works on both gateways; a replaced one and a deleted monitor's are refused within 1 s", async () => {
        const m = await create(api, { name: uid('hb'), type: 'heartbeat', paused: true });
        const old = m.heartbeat_token!;
        expect(old).to.match(/^hb_/);
        await eventually('the token works on both gateways', async () => {
          const got = await Promise.all(replicas.gateways.map((g) => beat(g, old)));
          return got.every((r) => r.status === 200) ? true : undefined;
        });

        const rotation = await call<Monitor>(
          replicas.query[1]!.url,
          api,
          'POST',
          `/api/monitors/${m.id}/heartbeat-token`,
        );
        const rotated = Date.now();
        expect(rotation.status, JSON.stringify(rotation.body)).to.equal(200);
        const fresh = rotation.body.data.heartbeat_token!;
        expect(fresh).to.match(/^hb_/).and.not.equal(old);
        expect(rotation.etag).to.equal('"2"');
        const swapped = await Promise.all(
          replicas.gateways.map((g) =>
            refusedAfter('the old token refused and the new one taken', rotated, async () =>
              (await refused(g, old)) ? !(await refused(g, fresh)) : false,
            ),
          ),
        );
        swapped.forEach((t, i) =>
          rows.push(['heartbeat token replaced (old refused, new taken)', `gateway ${i + 1}`, t]),
        );

        const removal = await call(replicas.query[0]!.url, api, 'DELETE', `/api/monitors/${m.id}`);
        const deleted = Date.now();
        expect(removal.status, JSON.stringify(removal.body)).to.equal(200);
        const gone = await Promise.all(
          replicas.gateways.map((g) =>
            refusedAfter("the deleted monitor's token refused", deleted, () => refused(g, fresh)),
          ),
        );
        gone.forEach((t, i) => rows.push(['heartbeat monitor deleted', `gateway ${i + 1}`, t]));

        for (const t of [...swapped, ...gone]) expect(t.answered).to.be.below(PROPAGATION_MS);
      });

      it('a heartbeat monitor changed to another type: its token refused on both gateways within 1 s', async () => {
        const m = await create(api, { name: uid('hb'), type: 'heartbeat', paused: true });
        const token = m.heartbeat_token!;
        await eventually('the token works on both gateways', async () =>
          (await Promise.all(replicas.gateways.map((g) => beat(g, token)))).every((r) => r.status === 200)
            ? true
            : undefined,
        );
        const change = await call<Monitor>(replicas.query[1]!.url, api, 'PATCH', `/api/monitors/${m.id}`, {
          type: 'http',
          url: 'http://127.0.0.1:9/',
        });
        const changed = Date.now();
        expect([change.status, change.body.data?.heartbeat_token]).to.deep.equal([200, undefined]);
        const took = await Promise.all(
          replicas.gateways.map((g) => refusedAfter('the token refused', changed, () => refused(g, token))),
        );
        took.forEach((t, i) => rows.push(['heartbeat monitor changed to http', `gateway ${i + 1}`, t]));
        for (const t of took) expect(t.answered).to.be.below(PROPAGATION_MS);
      });
    });
  });

  describe("each service's PostgreSQL role may do exactly what PG_SERVICE_ROLES grants", () => {
    const TABLES = [
      ...(Object.keys(REGISTRY_ENTITIES) as RegistryTable[]),
      'registry_changes',
      ...ALERTING_TABLES,
      ...PEOPLE_TABLES,
      ...STATUS_FOLLOW_TABLES,
      ...DELETION_TABLES,
      ...EVENT_SCHEMA_TABLES,
    ] as const;
    const PRIVILEGES: readonly PgPrivilege[] = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'];
    const pools = new Map<PgServiceRole, PgPool>();
    const hex = (bytes: number): string => randomBytes(bytes).toString('hex');
    /** Rows the statements touch, made by the owner. */
    const f = {
      tenant: '',
      bareTenant: '',
      keyId: '',
      withToken: `mon_${hex(8)}`,
      withoutToken: `mon_${hex(8)}`,
      slug: uid('roles'),
      seq: '',
      followers: undefined as FollowerFixtures | undefined,
      schema: '',
    };

    before(async () => {
      const db = adminRegistry();
      f.tenant = (await createTenant(db, `roles ${uid()}`)).tenant_id;
      f.bareTenant = (await createTenant(db, `roles bare ${uid()}`)).tenant_id;
      f.keyId = (await issueKey(db, { tenantId: f.tenant, kind: 'api', name: 'roles' })).record.key_id;
      await new MonitorStore(db, runSecretBox()).saveMany([
        placeholderMonitor(f.withToken, 'roles a', f.tenant),
        placeholderMonitor(f.withoutToken, 'roles b', f.tenant),
      ]);
      await db.query(`INSERT INTO heartbeat_tokens (monitor_id, tenant_id, nonce) VALUES ($1, $2, 'roles')`, [
        f.withToken,
        f.tenant,
      ]);
      await new StatusPageStore(db).create({
        slug: f.slug,
        tenant_id: f.tenant,
        title: 'roles',
        description: null,
        monitor_ids: [f.withToken],
        created_at: '2026-01-01T00:00:00Z',
        updated_at: '2026-01-01T00:00:00Z',
      });
      f.followers = await followerFixtures(db, f.tenant, f.slug);
      f.schema = await eventSchemaFixture(db, f.tenant);
      f.seq = (await db.query<{ seq: string }>('SELECT max(seq) AS seq FROM registry_changes')).rows[0]!.seq;
      const urls = testStack().users.postgres!;
      for (const role of PG_SERVICE_ROLE_NAMES) {
        pools.set(
          role,
          createPostgres(
            { databaseUrl: urls[role], databasePoolMax: 1, databaseTimeoutMs: 10_000 },
            createLogger({ service: 'test', level: 'warn' }),
            `roles-${role}`,
          ),
        );
      }
    });

    after(async () => {
      await Promise.all([...pools.values()].map((p) => p.end()));
    });

    /** A statement that does its privilege on one row of the table (the fixtures'), if allowed. */
    const statements: Record<RegistryTable, Record<PgPrivilege, () => [string, unknown[]]>> = {
      tenants: {
        SELECT: () => ['SELECT count(*) FROM tenants', []],
        INSERT: () => [`INSERT INTO tenants (tenant_id, name) VALUES ($1, 'probe')`, [`ten_probe${hex(4)}`]],
        UPDATE: () => [`UPDATE tenants SET name = 'probe' WHERE tenant_id = $1`, [f.bareTenant]],
        DELETE: () => ['DELETE FROM tenants WHERE tenant_id = $1', [f.bareTenant]],
      },
      access_keys: {
        SELECT: () => ['SELECT count(*) FROM access_keys', []],
        INSERT: () => [
          `INSERT INTO access_keys (key_id, tenant_id, kind, name, secret_hash) VALUES ($1, $2, 'api', 'probe', $3)`,
          [hex(8), f.tenant, hex(32)],
        ],
        UPDATE: () => ['UPDATE access_keys SET revoked = true WHERE key_id = $1', [f.keyId]],
        DELETE: () => ['DELETE FROM access_keys WHERE key_id = $1', [f.keyId]],
      },
      monitors: {
        SELECT: () => ['SELECT count(*) FROM monitors', []],
        INSERT: () => [
          `INSERT INTO monitors (id, tenant_id, version, spec, sealed, created_at, updated_at)
           VALUES ($1, $2, 1, '{}', '', now(), now())`,
          [`mon_${hex(8)}`, f.tenant],
        ],
        UPDATE: () => ['UPDATE monitors SET version = 9 WHERE id = $1', [f.withoutToken]],
        DELETE: () => ['DELETE FROM monitors WHERE id = $1', [f.withoutToken]],
      },
      heartbeat_tokens: {
        SELECT: () => ['SELECT count(*) FROM heartbeat_tokens', []],
        INSERT: () => [
          `INSERT INTO heartbeat_tokens (monitor_id, tenant_id, nonce) VALUES ($1, $2, 'probe')`,
          [f.withoutToken, f.tenant],
        ],
        UPDATE: () => [`UPDATE heartbeat_tokens SET nonce = 'probe' WHERE monitor_id = $1`, [f.withToken]],
        DELETE: () => ['DELETE FROM heartbeat_tokens WHERE monitor_id = $1', [f.withToken]],
      },
      status_pages: {
        SELECT: () => ['SELECT count(*) FROM status_pages', []],
        INSERT: () => [
          `INSERT INTO status_pages (slug, tenant_id, version, title, monitor_ids, created_at, updated_at)
           VALUES ($1, $2, 1, 'probe', ARRAY[$3::text], now(), now())`,
          [uid('probe'), f.tenant, f.withToken],
        ],
        UPDATE: () => [`UPDATE status_pages SET title = 'probe' WHERE slug = $1`, [f.slug]],
        DELETE: () => ['DELETE FROM status_pages WHERE slug = $1', [f.slug]],
      },
      channels: {
        SELECT: () => ['SELECT count(*) FROM channels', []],
        INSERT: () => [
          `INSERT INTO channels (id, tenant_id, type, version, spec, sealed, created_at, updated_at)
           VALUES ($1, $2, 'slack', 1, '{}', '', now(), now())`,
          [`chn_${hex(10)}`, f.tenant],
        ],
        UPDATE: () => [`UPDATE channels SET version = 9 WHERE tenant_id = $1`, [f.tenant]],
        DELETE: () => ['DELETE FROM channels WHERE tenant_id = $1', [f.tenant]],
      },
      escalation_policies: {
        SELECT: () => ['SELECT count(*) FROM escalation_policies', []],
        INSERT: () => [
          `INSERT INTO escalation_policies (id, tenant_id, version, name, steps, created_at, updated_at)
           VALUES ($1, $2, 1, 'probe', '[]', now(), now())`,
          [`esc_${hex(10)}`, f.tenant],
        ],
        UPDATE: () => [`UPDATE escalation_policies SET version = 9 WHERE tenant_id = $1`, [f.tenant]],
        DELETE: () => ['DELETE FROM escalation_policies WHERE tenant_id = $1', [f.tenant]],
      },
      incident_alerts: {
        SELECT: () => ['SELECT count(*) FROM incident_alerts', []],
        INSERT: () => [
          `INSERT INTO incident_alerts (incident_id, tenant_id, monitor_id, opened_at, alert, steps, step_at)
           VALUES ($1, $2, $3, now(), '{}', '[]', now())`,
          [uid('inc'), f.tenant, f.withToken],
        ],
        UPDATE: () => [`UPDATE incident_alerts SET step = 1 WHERE tenant_id = $1`, [f.tenant]],
        DELETE: () => ['DELETE FROM incident_alerts WHERE tenant_id = $1', [f.tenant]],
      },
      ...peopleProbes(() => f.tenant),
      ...followerProbes(() => f.followers!),
      ...deletionProbes(() => f.tenant),
      ...eventSchemaProbes(() => ({ tenant: f.tenant, schema: f.schema })),
      registry_changes: {
        SELECT: () => ['SELECT count(*) FROM registry_changes', []],
        INSERT: () => [`INSERT INTO registry_changes (entity, id) VALUES ('probe', 'probe')`, []],
        UPDATE: () => [`UPDATE registry_changes SET entity = 'probe' WHERE seq = $1`, [f.seq]],
        DELETE: () => ['DELETE FROM registry_changes WHERE seq = $1', [f.seq]],
      },
    };

    /** Runs the statement as `role` in a transaction that is rolled back: its row count, or its SQLSTATE. */
    async function attempt(role: PgServiceRole, sql: string, params: unknown[] = []): Promise<number | string> {
      const client = await pools.get(role)!.connect();
      try {
        await client.query('BEGIN');
        try {
          return (await client.query(sql, params)).rowCount ?? 0;
        } catch (err) {
          return sqlState(err) ?? String(err);
        } finally {
          await client.query('ROLLBACK');
        }
      } finally {
        client.release();
      }
    }

    it('connects as the service roles, none of them a superuser', async () => {
      const database = new URL(testStack().users.postgres!.owner).pathname.slice(1);
      for (const role of PG_SERVICE_ROLE_NAMES) {
        const { rows } = await pools
          .get(role)!
          .query<{ me: string; su: boolean }>(
            'SELECT current_user AS me, rolsuper AS su FROM pg_roles WHERE rolname = current_user',
          );
        expect(rows[0], role).to.deep.equal({ me: pgRoleName(database, role), su: false });
      }
    });

    it('every table and privilege: allowed ones succeed (rolled back), the others fail with 42501', async () => {
      // UPDATE and DELETE name their row in WHERE, which needs SELECT too: the definition
      // grants no write without it, so each statement tests just its own privilege.
      for (const role of PG_SERVICE_ROLE_NAMES)
        for (const t of TABLES)
          if (pgIsGranted(role, t, 'UPDATE') || pgIsGranted(role, t, 'DELETE'))
            expect(pgIsGranted(role, t, 'SELECT'), `${role} ${t}`).to.equal(true);
      const got: string[] = [];
      const want: string[] = [];
      for (const role of PG_SERVICE_ROLE_NAMES) {
        for (const t of TABLES) {
          for (const p of PRIVILEGES) {
            const [sql, params] = statements[t][p]();
            const r = await attempt(role, sql, params);
            got.push(`${role} ${p} ${t}: ${typeof r === 'number' ? 'ok' : r}`);
            want.push(`${role} ${p} ${t}: ${pgIsGranted(role, t, p) ? 'ok' : '42501'}`);
          }
        }
      }
      expect(got).to.deep.equal(want);
      expect(got.filter((g) => g.endsWith('ok')).length).to.be.greaterThan(10);
      expect(got.filter((g) => g.endsWith('42501')).length).to.be.greaterThan(40);
    });

    it("no role may create a table (temporary or not) or a schema, nor read another service's secrets", async () => {
      for (const role of PG_SERVICE_ROLE_NAMES) {
        expect(await attempt(role, 'CREATE TABLE public.role_probe (a int)'), role).to.equal('42501');
        expect(await attempt(role, 'CREATE SCHEMA role_probe'), role).to.equal('42501');
        // Not even a temporary one (PUBLIC's TEMPORARY on the database is revoked).
        expect(await attempt(role, 'CREATE TEMP TABLE role_probe (a int)'), role).to.equal('42501');
      }
      // The gateway reads no monitor (their sealed secrets); the runner no key hash and no heartbeat nonce.
      expect(pgIsGranted('ingest', 'monitors', 'SELECT')).to.equal(false);
      expect(await attempt('ingest', 'SELECT sealed FROM monitors')).to.equal('42501');
      for (const t of ['access_keys', 'heartbeat_tokens'] as const) {
        expect(pgIsGranted('runner', t, 'SELECT'), t).to.equal(false);
        expect(await attempt('runner', `SELECT * FROM ${t}`), t).to.equal('42501');
      }
    });

    it('only the query service may rename a tenant (PATCH /api/settings); no service makes or deletes one', async () => {
      for (const role of PG_SERVICE_ROLE_NAMES) {
        const rename = await attempt(role, `UPDATE tenants SET name = 'renamed' WHERE tenant_id = $1`, [f.bareTenant]);
        expect(rename, role).to.equal(role === 'query' ? 1 : '42501');
        expect(pgIsGranted(role, 'tenants', 'INSERT'), role).to.equal(false);
        expect(pgIsGranted(role, 'tenants', 'DELETE'), role).to.equal(false);
      }
    });

    it('only the query service may prune the change log', async () => {
      for (const role of PG_SERVICE_ROLE_NAMES) {
        const r = await attempt(role, `SELECT prune_registry_changes('1000 years'::interval)`);
        expect(r, role).to.equal(role === 'query' ? 1 : '42501');
      }
    });
  });
});

function countBy(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

/** A new person's row, as an INSERT's CTE (the people tables' probes need one). */
const NEW_PERSON = `WITH p AS (INSERT INTO people (person_id, email) VALUES ($1, $2) RETURNING person_id)`;

function newPerson(): [string, string] {
  const id = `per_${randomBytes(10).toString('hex')}`;
  return [id, `${id}@example.test`];
}

/** The probes of the people tables (migration 4): each statement on one row of its own, or none. */
function peopleProbes(
  tenant: () => string,
): Record<(typeof PEOPLE_TABLES)[number], Record<PgPrivilege, () => [string, unknown[]]>> {
  const h = (n: number): string => randomBytes(n).toString('hex');
  const later = "now() + interval '1 hour'";
  const plain = plainProbes;
  return {
    people: plain('people', () => [`INSERT INTO people (person_id, email) VALUES ($1, $2)`, newPerson()], 'name'),
    memberships: plain(
      'memberships',
      () => [
        `${NEW_PERSON} INSERT INTO memberships (tenant_id, person_id, role) SELECT $3, person_id, 'viewer' FROM p`,
        [...newPerson(), tenant()],
      ],
      'role',
    ),
    invitations: plain(
      'invitations',
      () => [
        `INSERT INTO invitations (invitation_id, tenant_id, email, role, invited_by, expires_at)
         VALUES ($1, $2, 'probe@example.test', 'viewer', 'probe', ${later})`,
        [`inv_${h(10)}`, tenant()],
      ],
      'role',
    ),
    sessions: plain(
      'sessions',
      () => [
        `${NEW_PERSON} INSERT INTO sessions (session_hash, person_id, tenant_id, method, csrf_token, expires_at)
         SELECT $3, person_id, $4, 'password', 'probe', ${later} FROM p`,
        [...newPerson(), h(32), tenant()],
      ],
      'ip',
    ),
    oidc_identities: plain(
      'oidc_identities',
      () => [
        `${NEW_PERSON} INSERT INTO oidc_identities (issuer, subject, person_id) SELECT 'probe', $3, person_id FROM p`,
        [...newPerson(), h(8)],
      ],
      'subject',
    ),
    oidc_flows: plain(
      'oidc_flows',
      () => [
        `INSERT INTO oidc_flows (state, browser_hash, nonce, code_verifier, expires_at)
         VALUES ($1, 'probe', 'probe', 'probe', ${later})`,
        [h(16)],
      ],
      'nonce',
    ),
    password_resets: plain(
      'password_resets',
      () => [
        `${NEW_PERSON} INSERT INTO password_resets (token_hash, person_id, expires_at) SELECT $3, person_id, ${later} FROM p`,
        [...newPerson(), h(32)],
      ],
      'used_at',
    ),
    sign_in_failures: plain(
      'sign_in_failures',
      () => [
        `INSERT INTO sign_in_failures (bucket, failures, last_failure_at, blocked_until) VALUES ($1, 1, now(), now())`,
        [`probe:${h(8)}`],
      ],
      'failures',
    ),
    tenant_settings: plain(
      'tenant_settings',
      () => [`INSERT INTO tenant_settings (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING`, [tenant()]],
      'version',
    ),
  };
}
