import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { sqlIdentifier, sqlString } from '@telemetry/platform';
import { createTenant, issueKey } from '@telemetry/store';
import {
  adminClickHouse,
  adminRegistry,
  apiClient,
  eventually,
  registryOwnerUrl,
  runConsumer,
  runGateway,
  runQuery,
  selectCount,
  selectRows,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';

const run = promisify(execFile);

interface SchemaView {
  id: string;
  action: string;
  latest_version: number;
  version: number;
  versions?: { version: number; schema: object; created_by: string }[];
}

/**
 * Event schemas (docs/event-schemas.md) on real Kafka, ClickHouse and PostgreSQL: the API
 * and its refusals, `reject` and `route` at two gateways, failed_events, and the replay CLI.
 */
describe('event schemas: reject or route to failed_events, replay after a fix (real Kafka, ClickHouse, PostgreSQL)', function () {
  this.timeout(120_000);
  let ch: ReturnType<typeof adminClickHouse>;
  let db = '';
  let consumer: Running;
  let gatewayA: Running;
  let gatewayB: Running;
  let query: Running;
  let tenant = '';
  let telemetryKey = '';
  let apiKey = '';
  let keyId = '';
  const api = apiClient(
    () => query.url,
    () => apiKey,
  );
  const source = 'shop';
  const category = 'order';
  const v1 = {
    type: 'object',
    required: ['price'],
    properties: { price: { type: 'number' }, sku: { type: 'string', pattern: '^[A-Z]{3}-[0-9]+$' } },
  };
  let schema: SchemaView;
  /** Events routed to failed_events by the schema's version 1, by event id. */
  const routed: string[] = [];

  const send = async (
    gateway: Running,
    events: object[],
  ): Promise<{ status: number; body: { code?: string; data?: string[]; details?: Record<string, unknown> } }> => {
    const r = await fetch(`${gateway.url}/api/telemetry/events?return=ids`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': telemetryKey },
      body: JSON.stringify({ events }),
    });
    return { status: r.status, body: (await r.json()) as never };
  };
  const inEvents = (eventId: string): Promise<number> =>
    selectCount(ch, `SELECT count() AS n FROM ${db}.events FINAL WHERE event_id = ${sqlString(eventId)}`);
  const withMarker = (table: string, marker: string): Promise<number> =>
    selectCount(
      ch,
      `SELECT count() AS n FROM ${db}.${table} WHERE tenant_id = ${sqlString(tenant)} AND position(${table === 'events' ? 'payload' : 'raw'}, ${sqlString(marker)}) > 0`,
    );
  const failedCli = async (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
    const s = testStack();
    try {
      const { stdout, stderr } = await run(
        'npx',
        ['tsx', '--conditions=source', 'tools/devstack/failed-events-cli.ts', ...args],
        {
          env: {
            ...process.env,
            DATABASE_URL: registryOwnerUrl(),
            CLICKHOUSE_URL: s.clickhouseUrl,
            CLICKHOUSE_DATABASE: s.database,
            KAFKA_BROKERS: s.kafkaBrokers,
            EVENTS_TOPIC: s.eventsTopic,
          },
          timeout: 60_000,
        },
      );
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  before(async () => {
    ch = adminClickHouse();
    db = sqlIdentifier(testStack().database);
    tenant = (await createTenant(adminRegistry(), uid('schemas'))).tenant_id;
    const t = await issueKey(adminRegistry(), { tenantId: tenant, kind: 'telemetry', name: 'schemas' });
    telemetryKey = t.key;
    keyId = t.record.key_id;
    apiKey = (
      await issueKey(adminRegistry(), {
        tenantId: tenant,
        kind: 'api',
        name: 'schemas',
        scopes: ['event_schemas:read', 'event_schemas:write'],
      })
    ).key;
    [consumer, gatewayA, gatewayB, query] = await Promise.all([runConsumer(), runGateway(), runGateway(), runQuery()]);
  });

  after(async () => {
    await Promise.all([gatewayA, gatewayB, query, consumer].map((s) => s?.stop()));
  });

  it('refuses schemas that are not JSON Schema, too large, too deep, remote or unbounded, with INVALID_SCHEMA', async () => {
    const create = (schemaBody: unknown, extra: object = {}) =>
      api<unknown>('POST', '/api/event-schemas', {
        source: 'bad',
        category: 'bad',
        action: 'reject',
        schema: schemaBody,
        ...extra,
      });
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 20; i++) deep = { type: 'object', properties: { a: deep } };
    const refusals: [string, unknown, RegExp][] = [
      ['not JSON Schema', { type: 'objekt' }, /not a JSON Schema/],
      ['unknown keyword (strict)', { type: 'object', colour: 'red' }, /not a JSON Schema/],
      ['too large', { type: 'object', description: 'x'.repeat(33 * 1024) }, /at most 32768/],
      ['too deep', deep, /deeper than 32/],
      ['remote $ref', { $ref: 'https://schemas.example.test/order.json' }, /remote references are refused/],
      [
        'backreference',
        { type: 'object', properties: { s: { type: 'string', pattern: '(a)\\1' } } },
        /linear-time engine cannot run/,
      ],
      [
        'lookahead',
        { type: 'object', patternProperties: { '^(?=x)': { type: 'string' } } },
        /linear-time engine cannot run/,
      ],
      ['format regex', { type: 'object', properties: { r: { type: 'string', format: 'regex' } } }, /format regex/],
    ];
    for (const [what, body, message] of refusals) {
      const r = await api<unknown>('POST', '/api/event-schemas', {
        source: 'bad',
        category: 'bad',
        action: 'reject',
        schema: body,
      });
      expect(r.status, what).to.equal(400);
      expect(r.code, what).to.equal('INVALID_SCHEMA');
      expect(JSON.stringify(r.body.details), what).to.match(message);
    }
    const badAction = await create({ type: 'object' }, { action: 'drop' });
    expect([badAction.status, badAction.code]).to.deep.equal([400, 'VALIDATION_FAILED']);
    // A pattern with nested quantifiers is fine: V8 falls back to its linear-time engine.
    const safe = await create({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } });
    expect(safe.status, safe.text).to.equal(201);
    const list = await api<SchemaView[]>('GET', '/api/event-schemas');
    expect(list.body.data?.map((s) => s.id)).to.deep.equal([(safe.body.data as SchemaView).id]);
    const gone = await api<null>('DELETE', `/api/event-schemas/${(safe.body.data as SchemaView).id}`);
    expect(gone.status).to.equal(200);
  });

  it('reject: a violating event is refused (400 SCHEMA_VIOLATION with its violations) and nothing of the request is stored', async () => {
    const made = await api<SchemaView>('POST', '/api/event-schemas', {
      source,
      category,
      action: 'reject',
      schema: v1,
    });
    expect(made.status, made.text).to.equal(201);
    schema = made.body.data!;
    expect(schema).to.include({ action: 'reject', latest_version: 1 });
    expect(schema.versions?.map((v) => v.version)).to.deep.equal([1]);
    expect(schema.versions?.[0]?.created_by).to.be.a('string').and.not.equal('');
    const again = await api<unknown>('POST', '/api/event-schemas', { source, category, action: 'route', schema: v1 });
    expect([again.status, again.code]).to.deep.equal([409, 'SCHEMA_EXISTS']);

    const marker = uid('rejected');
    const refused = await eventually('gateway A rejects', async () => {
      const r = await send(gatewayA, [
        { source, category, payload: { price: 3, marker } },
        { source, category, payload: { price: 'three', sku: 'abc', marker } },
      ]);
      return r.status === 400 ? r : undefined;
    });
    expect(refused.body.code).to.equal('SCHEMA_VIOLATION');
    expect(refused.body.details?.invalid_events).to.deep.equal([1]);
    const paths = (refused.body.details?.problems as { path: string }[]).map((p) => p.path).sort();
    expect(paths).to.deep.equal(['/events/1/payload/price', '/events/1/payload/sku']);
    expect(refused.body.details?.schemas).to.deep.equal([{ event: 1, schema_id: schema.id, version: 1 }]);

    // An event of a source without a schema behaves as today; once it is in, the refused pair is not.
    const other = await send(gatewayA, [{ source: 'web', category: category, payload: { price: 'free', marker } }]);
    expect(other.status).to.equal(200);
    await eventually('the unchecked event lands', async () =>
      (await inEvents(other.body.data![0]!)) === 1 ? true : undefined,
    );
    expect(await withMarker('events', marker)).to.equal(1);
    expect(await withMarker('failed_events', marker)).to.equal(0);
  });

  it('route: a change reaches a second gateway within about a second; violators land in failed_events, not events', async () => {
    const patched = await api<SchemaView>(
      'PATCH',
      `/api/event-schemas/${schema.id}`,
      { action: 'route' },
      {
        headers: { 'if-match': `"${schema.version}"` },
      },
    );
    expect(patched.status, patched.text).to.equal(200);
    const changedAt = Date.now();
    const stale = await api<unknown>(
      'PATCH',
      `/api/event-schemas/${schema.id}`,
      { action: 'route' },
      {
        headers: { 'if-match': `"${schema.version}"` },
      },
    );
    expect([stale.status, stale.code]).to.deep.equal([412, 'PRECONDITION_FAILED']);
    schema = patched.body.data!;
    const marker = uid('routed');
    for (const gateway of [gatewayB, gatewayA]) {
      const accepted = await eventually(
        'the gateway routes',
        async () => {
          const r = await send(gateway, [{ source, category, payload: { price: 'three', marker } }]);
          return r.status === 200 ? r : undefined;
        },
        5000,
      );
      routed.push(accepted.body.data![0]!);
    }
    expect(Date.now() - changedAt, 'the change reached both gateways').to.be.below(1500);

    const conforming = await send(gatewayA, [{ source, category, payload: { price: 3, sku: 'ABC-1', marker } }]);
    expect(conforming.status).to.equal(200);
    await eventually('the conforming event lands in events', async () =>
      (await inEvents(conforming.body.data![0]!)) === 1 ? true : undefined,
    );
    const rows = await eventually('the violators land in failed_events', async () => {
      const r = await selectRows<{
        event_id: string;
        schema_id: string;
        schema_version: number;
        violations: string;
        raw: string;
        source: string;
        replay_state: string;
      }>(
        ch,
        `SELECT event_id, schema_id, schema_version, violations, raw, source, replay_state FROM ${db}.failed_events FINAL
         WHERE tenant_id = ${sqlString(tenant)} AND event_id IN (${routed.map(sqlString).join(', ')})`,
      );
      return r.length === routed.length ? r : undefined;
    });
    for (const r of rows) {
      expect(r).to.include({ schema_id: schema.id, schema_version: 1, source, replay_state: 'failed' });
      expect(JSON.parse(r.violations)).to.deep.equal([{ path: '/price', message: 'must be number' }]);
      expect(JSON.parse(r.raw)).to.deep.include({
        event_id: r.event_id,
        key_id: keyId,
        payload: { price: 'three', marker },
      });
    }
    for (const id of routed) expect(await inEvents(id), id).to.equal(0);
  });

  it('a fixed version and `npm run failed-events -- replay` put the failed rows in events once', async () => {
    // A failed event of a user a deletion then suppressed: the replay skips it, for good.
    const erased = uid('erased');
    const gone = await send(gatewayA, [{ source, category, user_id: erased, payload: { price: 'three' } }]);
    expect(gone.status).to.equal(200);
    const goneId = gone.body.data![0]!;
    await eventually("the erased user's event lands in failed_events", async () =>
      (await selectCount(ch, `SELECT count() AS n FROM ${db}.failed_events WHERE event_id = ${sqlString(goneId)}`)) ===
      1
        ? true
        : undefined,
    );
    await adminRegistry().query(`INSERT INTO suppressions (tenant_id, kind, value) VALUES ($1, 'user_id', $2)`, [
      tenant,
      erased,
    ]);

    const fixed = {
      type: 'object',
      required: ['price'],
      properties: { price: { type: ['number', 'string'] }, sku: { type: 'string' } },
    };
    const added = await api<SchemaView>('POST', `/api/event-schemas/${schema.id}/versions`, { schema: fixed });
    expect(added.status, added.text).to.equal(201);
    expect(added.body.data?.latest_version).to.equal(2);
    expect(added.body.data?.versions?.map((v) => v.version)).to.deep.equal([2, 1]);
    const read = await api<SchemaView>('GET', `/api/event-schemas/${schema.id}`);
    expect(read.body.data?.versions?.[1]?.schema).to.deep.equal(v1);

    const listed = await failedCli('list', '--tenant', tenant);
    expect(listed.code, listed.stderr).to.equal(0);
    for (const id of routed) expect(listed.stdout).to.contain(id);
    const dry = await failedCli('replay', '--tenant', tenant, '--schema', schema.id, '--dry-run');
    expect(dry.stdout, dry.stderr).to.contain(
      `would replay ${routed.length}, still failing 0, skipped 0, suppressed 1`,
    );
    for (const id of routed) expect(await inEvents(id)).to.equal(0);

    const replayed = await failedCli('replay', '--tenant', tenant, '--schema', schema.id);
    expect(replayed.code, replayed.stderr).to.equal(0);
    expect(replayed.stdout).to.contain(`replayed ${routed.length}, still failing 0, skipped 0, suppressed 1`);
    for (const id of routed) {
      await eventually(`${id} lands in events`, async () => ((await inEvents(id)) === 1 ? true : undefined));
    }
    const states = await selectRows<{ replay_state: string }>(
      ch,
      `SELECT replay_state FROM ${db}.failed_events FINAL WHERE event_id IN (${routed.map(sqlString).join(', ')})`,
    );
    expect(states.map((s) => s.replay_state)).to.deep.equal(routed.map(() => 'replayed'));
    expect(await inEvents(goneId), 'the suppressed event is not replayed').to.equal(0);
    const goneState = await selectRows<{ replay_state: string }>(
      ch,
      `SELECT replay_state FROM ${db}.failed_events FINAL WHERE event_id = ${sqlString(goneId)}`,
    );
    expect(goneState.map((s) => s.replay_state)).to.deep.equal(['failed']);
    // Again: nothing left to replay, and each event is in events once.
    const again = await failedCli('replay', '--tenant', tenant);
    expect(again.stdout, again.stderr).to.contain('replayed 0, still failing 0, skipped 0, suppressed 1');
    for (const id of routed) expect(await inEvents(id)).to.equal(1);
    const refused = await failedCli('replay');
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.contain('--tenant');
  });
});
