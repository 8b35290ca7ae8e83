import { expect } from 'chai';
import { missingMessage } from '../../services/query-service/src/config-as-code/engine.js';
import type { Request, Response } from 'express';
import {
  createChannelValidators,
  createValidators,
  type AuditEntry,
  type ChannelObject,
  type ConfigItem,
  type EscalationPolicy,
  type Monitor,
} from '@telemetry/contract';
import { EgressPolicy } from '@telemetry/platform';
import { ChannelStore, createTenant, EscalationPolicyStore, issueKey, registryWrite } from '@telemetry/store';
import { runSecretBox } from '../../harness/processes.js';
import type { Auditor } from '../../services/query-service/src/access/audit.js';
import { channelConfigKind } from '../../services/query-service/src/config-as-code/channels.js';
import { escalationPolicyConfigKind } from '../../services/query-service/src/config-as-code/escalation-policies.js';
import type { ApplyContext, PlanContext, Prepared } from '../../services/query-service/src/config-as-code/kind.js';
import { adminRegistry, eventually, runConsumer, runQuery, uid, type Running } from '../support/fixtures.js';
import { apiClient } from '../support/api.js';

/**
 * Configuration keys of alert channels and escalation policies (docs/alerting.md, "API";
 * docs/as-code.md) on the real stack: `key` in the API (set, taken, changed, released,
 * per tenant, audited), and the kinds' writes in one registry transaction of the real
 * PostgreSQL (all or nothing; a channel an unmanaged monitor uses is not deleted).
 */
describe('alerting configuration keys: API and config kinds (real PostgreSQL, Kafka, ClickHouse)', function () {
  this.timeout(120_000);
  let query: Running;
  let consumer: Running;
  const tenants = { a: '', b: '' };
  const keys = { a: '', b: '' };
  const api = apiClient(
    () => query.url,
    () => keys.a,
  );
  const webhook = (name: string, extra: Record<string, unknown> = {}) => ({
    type: 'webhook',
    name,
    config: { url: 'https://ops.example.com/hook?token=abc', secret: 'a-webhook-secret-of-enough-length' },
    ...extra,
  });
  const ck = uid('ops')
    .toLowerCase()
    .replace(/[^a-z0-9._-]/g, '-');

  before(async () => {
    tenants.a = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    tenants.b = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const scopes = ['monitors:read', 'monitors:write', 'channels:read', 'channels:write', 'audit:read'];
    keys.a = (await issueKey(adminRegistry(), { tenantId: tenants.a, kind: 'api', name: 'a', scopes })).key;
    keys.b = (await issueKey(adminRegistry(), { tenantId: tenants.b, kind: 'api', name: 'b', scopes })).key;
    consumer = await runConsumer();
    query = await runQuery();
    for (const key of [keys.a, keys.b]) {
      await eventually('key loaded', async () =>
        (await api('GET', '/api/channels', undefined, { key })).status === 200 ? true : undefined,
      );
    }
  });
  after(async () => {
    await query?.stop();
    await consumer?.stop();
  });

  it('keeps a channel key unique per tenant: set on create, 409 KEY_TAKEN, changed and released by PATCH, audited', async () => {
    const created = await api<ChannelObject>('POST', '/api/channels', webhook('Keyed', { key: ck }));
    expect(created.status, created.text).to.equal(201);
    expect(created.body.data.key).to.equal(ck);
    const id = created.body.data.id;
    const plain = await api<ChannelObject>('POST', '/api/channels', webhook('Plain'));
    expect(plain.body.data.key).to.equal(null);

    const taken = await api('POST', '/api/channels', webhook('Again', { key: ck }));
    expect(taken.status, taken.text).to.equal(409);
    expect(taken.code).to.equal('KEY_TAKEN');
    const takenByPatch = await api('PATCH', `/api/channels/${plain.body.data.id}`, { key: ck });
    expect(takenByPatch.code).to.equal('KEY_TAKEN');
    const bad = await api('POST', '/api/channels', webhook('Bad key', { key: 'Not A Key' }));
    expect(bad.code).to.equal('VALIDATION_FAILED');
    expect(bad.body.details?.problems?.map((p) => p.path)).to.deep.equal(['/key']);
    const badPatch = await api('PATCH', `/api/channels/${id}`, { key: 'Not A Key' });
    expect(badPatch.code).to.equal('VALIDATION_FAILED');
    expect(badPatch.body.details?.problems?.map((p) => p.path)).to.deep.equal(['/key']);

    // Another tenant may use the same key.
    const other = await api<ChannelObject>('POST', '/api/channels', webhook('B', { key: ck }), { key: keys.b });
    expect(other.status, other.text).to.equal(201);
    expect(other.body.data.key).to.equal(ck);

    const renamed = await api<ChannelObject>('PATCH', `/api/channels/${id}`, { key: `${ck}-2` });
    expect(renamed.status, renamed.text).to.equal(200);
    expect(renamed.body.data).to.deep.include({ key: `${ck}-2`, name: 'Keyed', version: 2 });
    // The old key is free again; a PATCH without `key` keeps it.
    const reused = await api<ChannelObject>('PATCH', `/api/channels/${plain.body.data.id}`, { key: ck });
    expect(reused.body.data.key).to.equal(ck);
    const named = await api<ChannelObject>('PATCH', `/api/channels/${id}`, { name: 'Keyed, renamed' });
    expect(named.body.data.key).to.equal(`${ck}-2`);
    const released = await api<ChannelObject>('PATCH', `/api/channels/${id}`, { key: null });
    expect(released.body.data.key).to.equal(null);
    expect((await api<ChannelObject>('GET', `/api/channels/${id}`)).body.data.key).to.equal(null);
    const list = await api<ChannelObject[]>('GET', '/api/channels');
    expect(list.body.data.find((c) => c.id === plain.body.data.id)?.key).to.equal(ck);

    const updates = await eventually('the key changes in the audit log', async () => {
      const r = await api<AuditEntry[]>('GET', `/api/audit?action=channel.update&target_id=${id}`);
      return r.body.data?.length === 3 ? r.body.data : undefined;
    });
    const keyChanges = updates.map((e) => e.changes.key).filter((k) => k !== undefined);
    expect(keyChanges).to.deep.include.members([
      { before: ck, after: `${ck}-2` },
      { before: `${ck}-2`, after: null },
    ]);
  });

  it('keeps a policy key unique per tenant the same way', async () => {
    const channel = await api<ChannelObject>('POST', '/api/channels', webhook('For policies'));
    const steps = [{ channels: [channel.body.data.id] }];
    const created = await api<EscalationPolicy>('POST', '/api/escalation-policies', { key: ck, name: 'P', steps });
    expect(created.status, created.text).to.equal(201);
    expect(created.body.data.key).to.equal(ck);
    const taken = await api('POST', '/api/escalation-policies', { key: ck, name: 'P2', steps });
    expect(taken.code).to.equal('KEY_TAKEN');
    const plain = await api<EscalationPolicy>('POST', '/api/escalation-policies', { name: 'P3', steps });
    expect(plain.body.data.key).to.equal(null);
    expect((await api('PATCH', `/api/escalation-policies/${plain.body.data.id}`, { key: ck })).code).to.equal(
      'KEY_TAKEN',
    );
    const bChannel = await api<ChannelObject>('POST', '/api/channels', webhook('B2'), { key: keys.b });
    const inB = await api<EscalationPolicy>(
      'POST',
      '/api/escalation-policies',
      { key: ck, name: 'B', steps: [{ channels: [bChannel.body.data.id] }] },
      { key: keys.b },
    );
    expect(inB.status, inB.text).to.equal(201);
    const id = created.body.data.id;
    const changed = await api<EscalationPolicy>('PATCH', `/api/escalation-policies/${id}`, { key: `${ck}-x` });
    expect(changed.body.data).to.deep.include({ key: `${ck}-x`, version: 2 });
    const released = await api<EscalationPolicy>('PATCH', `/api/escalation-policies/${id}`, { key: null });
    expect(released.body.data.key).to.equal(null);
    const read = await api<EscalationPolicy>('GET', `/api/escalation-policies/${id}`);
    expect(read.body.data).to.deep.include({ key: null, name: 'P' });
  });

  describe('the config kinds in one registry transaction', () => {
    const pool = () => adminRegistry();
    const audited: string[] = [];
    const audit: Auditor = {
      record: (_req, _res, r) => Promise.resolve(void audited.push(`${r.action} ${r.target.id}`)),
      denied: () => Promise.resolve(),
    };
    const rules = {
      validators: createValidators(),
      channelValidators: createChannelValidators(),
      policy: new EgressPolicy({ allow: ['127.0.0.1:9'] }),
      minDelaySeconds: 30,
      audit,
    };
    // Stores of the run's registry (made once the stack is known), with the services' sealing keys.
    let channelKind: ReturnType<typeof channelConfigKind>;
    let policyKind: ReturnType<typeof escalationPolicyConfigKind>;
    before(() => {
      channelKind = channelConfigKind({ ...rules, store: new ChannelStore(adminRegistry(), runSecretBox()) });
      policyKind = escalationPolicyConfigKind({ ...rules, store: new EscalationPolicyStore(adminRegistry()) });
    });
    const apply = (): ApplyContext => ({
      tenantId: tenants.a,
      req: { get: () => undefined } as unknown as Request,
      res: { locals: {} } as unknown as Response,
    });
    const desiredOf = <D>(p: Prepared<D>): D => {
      if ('problems' in p) throw new Error(JSON.stringify(p.problems));
      return p.desired;
    };
    const channelIds = new Map<string, string>();
    let n = 0;
    const plan = (newId: () => string): PlanContext => ({
      tenantId: tenants.a,
      idOf: (section, key) => (section === 'channels' ? channelIds.get(key) : undefined),
      missing: (section, key) => missingMessage(section, key, new Map()),
      newId,
    });
    const channelItem = (key: string, name: string): ConfigItem => ({
      key,
      type: 'slack',
      name,
      config: { url: `http://127.0.0.1:9/services/T0/B0/${key}` },
    });
    const k = (s: string) => `${ck}-${s}`;

    it('creates, updates and adopts in the caller’s transaction; a taken key rolls the whole transaction back', async () => {
      const pagerId = `chn_${(++n).toString(16).padStart(4, '0')}${Date.now().toString(16).padStart(16, '0')}`;
      channelIds.set(k('pager'), pagerId);
      const desired = desiredOf(
        channelKind.prepare(
          channelItem(k('pager'), 'Pager'),
          undefined,
          plan(() => pagerId),
        ),
      );
      const policy = desiredOf(
        policyKind.prepare(
          { key: k('esc'), name: 'Escalate', steps: [{ channels: [k('pager')] }] },
          undefined,
          plan(() => `esc_${Date.now().toString(16).padStart(20, '0')}`),
        ),
      );
      const after = await registryWrite(pool(), async (tx) => [
        await channelKind.create(tx, desired, apply()),
        await policyKind.create(tx, policy, apply()),
      ]);
      expect(audited).to.deep.equal([]);
      for (const a of after) await a();
      expect(audited).to.deep.equal([`channel.create ${pagerId}`, `escalation_policy.create ${policy.id}`]);
      const shown = await api<ChannelObject>('GET', `/api/channels/${pagerId}`);
      expect(shown.body.data).to.deep.include({ key: k('pager'), name: 'Pager', type: 'slack' });
      expect(
        (await api<EscalationPolicy>('GET', `/api/escalation-policies/${policy.id}`)).body.data.steps,
      ).to.deep.equal([{ channels: [pagerId] }]);

      // All or nothing: a second channel with the first one's key fails the transaction, and the first write in it is undone.
      const first = desiredOf(
        channelKind.prepare(
          channelItem(k('first'), 'First'),
          undefined,
          plan(() => 'chn_0000000000000000f1f1'),
        ),
      );
      const clash = { ...first, id: 'chn_0000000000000000f2f2', key: k('pager') };
      let err: unknown;
      try {
        await registryWrite(pool(), async (tx) => {
          await channelKind.create(tx, { ...first, id: `chn_${Date.now().toString(16).padStart(20, '0')}` }, apply());
          await channelKind.create(tx, clash, apply());
        });
      } catch (e) {
        err = e;
      }
      expect((err as { code?: string }).code).to.equal('KEY_TAKEN');
      const names = (await api<ChannelObject[]>('GET', '/api/channels')).body.data.map((c) => c.name);
      expect(names).to.not.include('First');

      // load, changes and update: a renamed item changes the name only, and the API shows it.
      const [loaded] = await registryWrite(pool(), async (tx) =>
        (await channelKind.load(tx, tenants.a)).filter((c) => c.id === pagerId),
      );
      expect(loaded).to.deep.include({ key: k('pager'), name: 'Pager' });
      const renamed = desiredOf(
        channelKind.prepare(
          channelItem(k('pager'), 'Pager 2'),
          loaded,
          plan(() => 'unused'),
        ),
      );
      expect(channelKind.changes(loaded!, renamed)).to.deep.equal(['name']);
      const afterUpdate = await registryWrite(pool(), (tx) => channelKind.update(tx, loaded!, renamed, apply()));
      await afterUpdate();
      const updated = (await api<ChannelObject>('GET', `/api/channels/${pagerId}`)).body.data;
      expect(updated).to.deep.include({ name: 'Pager 2', key: k('pager'), version: 2 });

      // unkeyed and setKey (adopt).
      const plain = await api<ChannelObject>('POST', '/api/channels', webhook('Adopt me'));
      const unkeyed = await registryWrite(pool(), (tx) => channelKind.unkeyed(tx, tenants.a));
      expect(unkeyed).to.deep.include({ id: plain.body.data.id, name: 'Adopt me' });
      expect(unkeyed.map((u) => u.id)).to.not.include(pagerId);
      expect(
        await registryWrite(pool(), (tx) => channelKind.setKey(tx, tenants.a, plain.body.data.id, k('adopted'))),
      ).to.equal(true);
      expect((await api<ChannelObject>('GET', `/api/channels/${plain.body.data.id}`)).body.data.key).to.equal(
        k('adopted'),
      );
    });

    it('does not delete a channel an unmanaged monitor uses: a problem, and the channel stays', async () => {
      const pagerId = channelIds.get(k('pager'))!;
      const monitor = await api<Monitor>('POST', '/api/monitors', {
        name: 'Unmanaged',
        url: 'http://127.0.0.1:9/health',
        interval_seconds: 60,
        channels: [pagerId],
      });
      expect(monitor.status, monitor.text).to.equal(201);
      const [current] = await registryWrite(pool(), async (tx) =>
        (await channelKind.load(tx, tenants.a)).filter((c) => c.id === pagerId),
      );
      const [policy] = await registryWrite(pool(), async (tx) =>
        (await policyKind.load(tx, tenants.a)).filter((p) => p.key === k('esc')),
      );
      // The policy goes first (as the engine orders deletes); the monitor still holds the channel.
      const outcome = await registryWrite(pool(), async (tx) => {
        const a = await policyKind.remove(tx, policy!, apply());
        const b = await channelKind.remove(tx, current!, apply());
        return [a, b];
      });
      expect(outcome[0]).to.be.a('function');
      expect(outcome[1]).to.be.an('array');
      const [problem] = outcome[1] as { path: string; message: string }[];
      expect(problem!.message).to.contain(`monitor ${monitor.body.data.id}`);
      expect((await api('GET', `/api/channels/${pagerId}`)).status).to.equal(200);

      // Once the monitor is gone, the channel goes too.
      expect((await api('DELETE', `/api/monitors/${monitor.body.data.id}`)).status).to.equal(200);
      const removed = await registryWrite(pool(), (tx) => channelKind.remove(tx, current!, apply()));
      expect(removed).to.be.a('function');
      expect((await api('GET', `/api/channels/${pagerId}`)).code).to.equal('CHANNEL_NOT_FOUND');
    });
  });
});
