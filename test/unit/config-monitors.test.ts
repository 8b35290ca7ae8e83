import { expect } from 'chai';
import { missingMessage } from '../../services/query-service/src/config-as-code/engine.js';
import {
  createValidators,
  type ConfigItem,
  type ConfigSection,
  type MonitorCreate,
  type Problem,
} from '@telemetry/contract';
import { EgressPolicy, newSealingKeyText, parseSealingKeys, SecretBox, type Logger } from '@telemetry/platform';
import { createSettings, type KeyedMonitor, type MonitorStore } from '@telemetry/store';
import { changedFields, type Auditor } from '../../services/query-service/src/access/audit.js';
import { monitorConfigKind, type DesiredMonitor } from '../../services/query-service/src/config-as-code/monitors.js';
import type {
  ConfigKindModule,
  ExportContext,
  PlanContext,
} from '../../services/query-service/src/config-as-code/kind.js';
import type { MonitorDirectory } from '../../services/query-service/src/monitor-directory.js';
import { audited } from '../../services/query-service/src/monitor-rules.js';

const TENANT = 'ten_a';
const CHANNEL = 'chn_aaaaaaaaaaaaaaaaaaaa';
const OTHER_CHANNEL = 'chn_bbbbbbbbbbbbbbbbbbbb';
const POLICY = 'esc_aaaaaaaaaaaaaaaaaaaa';

/** The ids of the document's and the tenant's keyed objects. */
const ids = new Map<string, string>([
  ['channels/pager', CHANNEL],
  ['channels/mail', OTHER_CHANNEL],
  ['escalation_policies/night', POLICY],
]);
const keys = new Map([...ids].map(([k, id]) => [id, k.split('/')[1]!]));

const kindWith = (over: { heartbeatKey?: string; minIntervalSeconds?: number } = {}) =>
  monitorConfigKind({
    validators: createValidators(),
    policy: new EgressPolicy(),
    minIntervalSeconds: over.minIntervalSeconds ?? 1,
    heartbeatKey: over.heartbeatKey ?? 'heartbeat-key-for-tests-0123456789',
    // prepare, changes, secrets and exportOf touch none of these.
    store: {} as MonitorStore,
    directory: {} as MonitorDirectory,
    notifier: { notify: () => Promise.resolve() },
    quotaOf: () => 100,
    audit: {} as Auditor,
    logger: {} as Logger,
  });
const kind = kindWith();
// The engine holds every kind as a ConfigKindModule.
const _engineSees: ConfigKindModule = kind;

let made = 0;
const plan: PlanContext = {
  tenantId: TENANT,
  idOf: (section: ConfigSection, key: string) => ids.get(`${section}/${key}`),
  missing: (section, key) => missingMessage(section, key, new Map()),
  newId: () => `mon_${String(++made).padStart(16, '0')}`,
};

/** A monitor as POST /api/monitors stores it, with this key, at version 3. */
function stored(key: string, body: MonitorCreate, id = 'mon_00000000000000aa'): KeyedMonitor {
  return {
    tenant_id: TENANT,
    id,
    key,
    ...createSettings(body, id),
    webhook_secret: 'whsec_0123456789abcdef0123456789abcdef',
    created_at: '2026-11-01T10:00:00Z',
    updated_at: '2026-11-02T10:00:00Z',
    version: 3,
  };
}

function prepared(item: ConfigItem, current?: KeyedMonitor, k = kind): DesiredMonitor {
  const p = k.prepare(item, current, plan);
  if ('problems' in p) throw new Error(`unexpected problems: ${JSON.stringify(p.problems)}`);
  return p.desired;
}

const strict = kindWith({ minIntervalSeconds: 10 });

function problemsOf(item: ConfigItem, k = strict): Problem[] {
  const p = k.prepare(item, undefined, plan);
  if (!('problems' in p)) throw new Error('expected problems');
  return p.problems;
}

/** What the engine does before prepare(): a SecretPin whose fingerprint matches the stored value at its path becomes that value. */
function resolvePins(
  item: unknown,
  secrets: Map<string, string>,
  box: SecretBox,
  path = '',
  seen: string[] = [],
): unknown {
  if (Array.isArray(item)) return item.map((v, i) => resolvePins(v, secrets, box, `${path}/${i}`, seen));
  if (item !== null && typeof item === 'object') {
    const o = item as Record<string, unknown>;
    if (typeof o.fingerprint === 'string' && Object.keys(o).length === 1) {
      const value = secrets.get(path);
      expect(value, `a secret at ${path}`).to.be.a('string');
      expect(box.fingerprintMatches(o.fingerprint, value!, TENANT), `the fingerprint at ${path}`).to.equal(true);
      seen.push(path);
      return value;
    }
    return Object.fromEntries(
      Object.entries(o).map(([k, v]) => [
        k,
        resolvePins(v, secrets, box, `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, seen),
      ]),
    );
  }
  return item;
}

describe('monitors in a configuration document (unit)', () => {
  it('reports every problem of an item with its path: schema, rules, references, egress, heartbeat key', () => {
    const problems = problemsOf({
      key: 'api',
      name: 'API',
      url: 'http://api.example.com/health',
      interval_seconds: 5,
      channels: ['pager', 'nope'],
      escalation_policy: 'missing',
      colour: 'red',
    });
    // The schema's problems and the references' together; the rules after the schema are not judged yet.
    expect(problems).to.deep.equal([
      { path: '/channels/1', message: 'there is no channel with key nope' },
      { path: '/escalation_policy', message: 'there is no escalation policy with key missing' },
      { path: '/colour', message: 'is not an allowed field' },
    ]);

    const rules = problemsOf({
      key: 'api',
      name: 'API',
      url: 'http://api.example.com/health',
      interval_seconds: 5,
      timeout_ms: 8000,
    });
    expect(rules.map((p) => p.path)).to.have.members(['/interval_seconds', '/timeout_ms']);
    expect(rules.find((p) => p.path === '/interval_seconds')?.message).to.match(/MIN_INTERVAL_SECONDS/);

    const denied = problemsOf({ key: 'db', name: 'DB', url: 'http://127.0.0.3:8080/' });
    expect(denied).to.have.length(1);
    expect(denied[0]!.path).to.equal('/url');
    expect(denied[0]!.message).to.match(/egress policy.*denied range/);

    const webhook = problemsOf({
      key: 'w',
      name: 'W',
      url: 'https://api.example.com/',
      webhooks: ['https://hooks.example.com/x', 'http://127.0.0.4/hook'],
    });
    expect(webhook.map((p) => p.path)).to.deep.equal(['/webhooks/1']);

    const heartbeat = problemsOf(
      { key: 'cron', name: 'cron', type: 'heartbeat', interval_seconds: 60 },
      kindWith({ heartbeatKey: '' }),
    );
    expect(heartbeat).to.deep.equal([
      { path: '/type', message: 'heartbeat monitors need HEARTBEAT_KEY, which this server does not have' },
    ]);

    const wrongType = problemsOf({ key: 'x', name: 'X', url: 'https://api.example.com/', channels: [7] });
    expect(wrongType.map((p) => p.path)).to.deep.equal(['/channels/0']);
  });

  it('keeps, as PATCH does, an interval and a type that were allowed when the monitor was made', () => {
    const current = stored('fast', { name: 'fast', url: 'https://api.example.com/', interval_seconds: 5 });
    const item = { key: 'fast', name: 'fast', url: 'https://api.example.com/', interval_seconds: 5 };
    const p = strict.prepare(item, current, plan);
    expect(p).to.not.have.property('problems');
    // A new interval below MIN_INTERVAL_SECONDS is refused, as a new monitor's is.
    const faster = strict.prepare({ ...item, interval_seconds: 4, timeout_ms: 4000 }, current, plan);
    expect(faster).to.deep.equal({
      problems: [{ path: '/interval_seconds', message: 'must be at least 10 (MIN_INTERVAL_SECONDS)' }],
    });
    expect(strict.prepare(item, undefined, plan)).to.have.property('problems');
  });

  it('makes the item into the monitor the create route would make, references as ids', () => {
    const d = prepared({
      key: 'api',
      name: 'API',
      url: 'https://api.example.com/health',
      interval_seconds: 5,
      channels: ['pager', 'mail'],
      escalation_policy: 'night',
    });
    expect(d.monitor).to.include({
      tenant_id: TENANT,
      key: 'api',
      name: 'API',
      interval_seconds: 5,
      // The create route fits the default timeout to a shorter interval.
      timeout_ms: 5000,
      escalation_policy: POLICY,
      method: 'GET',
    });
    expect(d.monitor.id).to.match(/^mon_[0-9a-f]{16}$/);
    expect(d.monitor.channels).to.deep.equal([CHANNEL, OTHER_CHANNEL]);
    expect(d.monitor.webhook_secret).to.match(/^whsec_/);
    expect(d.setsWebhookSecret).to.equal(false);
  });

  it('changes(): none for the stored monitor described again, each field that differs otherwise (left out = default)', () => {
    const body = {
      name: 'API',
      url: 'https://api.example.com/health',
      interval_seconds: 30,
      headers: { Authorization: 'Bearer s3cret', 'X-Trace': 'on' },
      channels: [CHANNEL],
    } satisfies MonitorCreate;
    const current = stored('api', body);
    const item = { key: 'api', ...body, channels: ['pager'] };
    const same = prepared(item, current);
    expect(kind.changes(current, same)).to.deep.equal([]);
    // It stays the same monitor: its id, its creation time, its signing secret.
    expect(same.monitor).to.include({
      id: current.id,
      created_at: current.created_at,
      webhook_secret: current.webhook_secret,
    });
    // Headers in another order are the same headers.
    const reordered = { ...item, headers: { 'X-Trace': 'on', Authorization: 'Bearer s3cret' } };
    expect(kind.changes(current, prepared(reordered, current))).to.deep.equal([]);

    // A secret compared by value.
    expect(
      kind.changes(
        current,
        prepared({ ...item, headers: { ...item.headers, Authorization: 'Bearer other' } }, current),
      ),
    ).to.deep.equal(['headers']);
    expect(kind.changes(current, prepared({ ...item, interval_seconds: 60, paused: true }, current))).to.deep.equal([
      'interval_seconds',
      'paused',
    ]);
    // Left out: its default (no channels), not what is stored.
    const { channels: _c, ...withoutChannels } = item;
    expect(kind.changes(current, prepared(withoutChannels, current))).to.deep.equal(['channels']);
    // The signing secret only when the item sets it.
    const secret = prepared({ ...item, webhook_secret: 'whsec_from_the_file_0123456789' }, current);
    expect(secret.setsWebhookSecret).to.equal(true);
    expect(kind.changes(current, secret)).to.deep.equal(['webhook_secret']);
    const sameSecret = prepared({ ...item, webhook_secret: current.webhook_secret }, current);
    expect(kind.changes(current, sameSecret)).to.deep.equal([]);
  });

  it('secrets(): what the API masks, unmasked at its place in an item', () => {
    const m = stored('api', {
      name: 'API',
      url: 'https://user:pw@api.example.com/health?token=abc',
      headers: { Authorization: 'Bearer s3cret', 'a~b': 'x' },
      webhooks: ['https://hooks.example.com/T0/secret-path'],
    });
    expect([...kind.secrets(m)]).to.deep.equal([
      ['/url', 'https://user:pw@api.example.com/health?token=abc'],
      ['/headers/Authorization', 'Bearer s3cret'],
      ['/headers/a~0b', 'x'],
      ['/webhooks/0', 'https://hooks.example.com/T0/secret-path'],
      ['/webhook_secret', m.webhook_secret],
    ]);
    // A URL without credentials or query values is shown as it is: no secret.
    const plain = stored('plain', { name: 'P', url: 'https://api.example.com/health' });
    expect([...kind.secrets(plain).keys()]).to.deep.equal(['/webhook_secret']);
  });

  describe('export, then prepare again (a real SecretBox)', () => {
    const box = new SecretBox(parseSealingKeys(newSealingKeyText('k1')));
    const exportCtx: ExportContext = {
      tenantId: TENANT,
      keyOf: (_section, id) => keys.get(id),
      fingerprint: (value) => box.fingerprint(value, TENANT),
    };

    function roundTrip(current: KeyedMonitor): { item: ConfigItem; pinned: string[] } {
      const exported = kind.exportOf(current, exportCtx);
      const pinned: string[] = [];
      const item = resolvePins(exported, kind.secrets(current), box, '', pinned) as ConfigItem;
      expect(kind.changes(current, prepared(item, current))).to.deep.equal([]);
      return { item: exported, pinned };
    }

    it('an http monitor with secrets: pins in place of every secret, references as keys, no change', () => {
      const current = stored('api', {
        name: 'API',
        url: 'https://user:pa55word-secret@api.example.com/health?token=tok-secret-abc',
        interval_seconds: 5,
        headers: { Authorization: 'Bearer s3cret' },
        webhooks: ['https://hooks.example.com/T0/secret-path'],
        channels: [CHANNEL, 'chn_cccccccccccccccccccc'],
        escalation_policy: POLICY,
        assertions: ['status == 200'],
      });
      const { item, pinned } = roundTrip({ ...current, channels: [CHANNEL] });
      const text = JSON.stringify(item);
      for (const secret of [
        'pa55word-secret',
        'tok-secret-abc',
        'Bearer s3cret',
        'secret-path',
        current.webhook_secret,
      ]) {
        expect(text).to.not.include(secret);
      }
      expect(pinned).to.have.members(['/url', '/headers/Authorization', '/webhooks/0']);
      expect(item).to.deep.include({ key: 'api', name: 'API', channels: ['pager'], escalation_policy: 'night' });
      // Only what the create route would not make anyway.
      expect(item).to.not.have.any.keys('timeout_ms', 'method', 'follow_redirects', 'webhook_secret');
      expect(item.interval_seconds).to.equal(5);
      // A channel or policy without a key keeps its id: planning the export says to give it one,
      // rather than applying a monitor that lost them.
      const unkeyedPolicy = 'esc_bbbbbbbbbbbbbbbbbbbb';
      const withUnmanaged = { ...current, escalation_policy: unkeyedPolicy };
      const out = kind.exportOf(withUnmanaged, exportCtx);
      expect(out).to.deep.include({
        channels: ['pager', 'chn_cccccccccccccccccccc'],
        escalation_policy: unkeyedPolicy,
      });
      const again = kind.prepare(
        resolvePins(out, kind.secrets(withUnmanaged), box, '', []) as ConfigItem,
        withUnmanaged,
        plan,
      );
      const adopt = 'has no key: give it one (telemetry export --adopt, POST /api/config/adopt)';
      expect(again).to.deep.equal({
        problems: [
          { path: '/channels/1', message: `chn_cccccccccccccccccccc ${adopt}` },
          { path: '/escalation_policy', message: `${unkeyedPolicy} ${adopt}` },
        ],
      });
    });

    it('an api flow with variables, and a heartbeat monitor (its URL made by the server, its nonce ignored)', () => {
      const flow = stored('flow', {
        name: 'Login flow',
        type: 'api_flow',
        url: 'https://api.example.com/',
        interval_seconds: 300,
        variables: { password: 'hunter2-secret' },
        api_steps: [
          { url: '/login', method: 'POST', body: '{"p":"{{password}}"}', extract: { token: '$.token' } },
          { url: '/me', headers: { Authorization: 'Bearer {{token}}' } },
        ],
      });
      const { item, pinned } = roundTrip(flow);
      expect(pinned).to.deep.equal(['/variables/password']);
      expect(JSON.stringify(item)).to.not.include('hunter2');

      const beat = {
        ...stored('beat', { name: 'nightly', type: 'heartbeat', interval_seconds: 3600 }),
        heartbeat_nonce: 'n',
      };
      const exported = roundTrip(beat).item;
      expect(exported).to.not.have.property('url');
      expect(exported).to.include({ type: 'heartbeat', interval_seconds: 3600 });
    });
  });

  it('keepsSecret: a pinned secret stays with its origin, by the rule a PATCH follows (unmaskPatch)', () => {
    const headers = { Authorization: 'Bearer s3cret' };
    const m = stored('api', { name: 'API', url: 'https://api.example.com/health', headers });
    const item = (url: string): ConfigItem => ({ key: 'api', name: 'API', url, headers });
    const samePlace = kind.keepsSecret!(m, prepared(item('https://api.example.com/other?x=1'), m));
    expect(samePlace('/headers/Authorization')).to.equal(true);
    for (const elsewhere of [
      'https://api.example.com:8443/health',
      'http://api.example.com/health',
      'https://x.example/',
    ]) {
      const keeps = kind.keepsSecret!(m, prepared(item(elsewhere), m));
      expect(keeps('/headers/Authorization'), elsewhere).to.equal(false);
      expect(keeps('/webhook_secret'), elsewhere).to.equal(true);
    }
    // An api flow's variables go where its steps go: a step to a new origin takes them elsewhere.
    const flowBody = {
      name: 'Login',
      type: 'api_flow' as const,
      url: 'https://api.example.com/',
      interval_seconds: 300,
      variables: { password: 'hunter2-secret' },
      api_steps: [{ url: '/login', method: 'POST' as const, body: '{"p":"{{password}}"}' }],
    };
    const flow = stored('flow', flowBody);
    const flowItem = (steps: unknown[]): ConfigItem => ({ key: 'flow', ...flowBody, api_steps: steps });
    expect(
      kind.keepsSecret!(flow, prepared(flowItem([...flowBody.api_steps, { url: '/me' }]), flow))('/variables/password'),
    ).to.equal(true);
    const away = kind.keepsSecret!(
      flow,
      prepared(flowItem([...flowBody.api_steps, { url: 'https://collect.example/in' }]), flow),
    );
    expect(away('/variables/password')).to.equal(false);
  });

  it('the audit log records a key change like any other field', () => {
    const m = stored('api', { name: 'API', url: 'https://api.example.com/' });
    expect(changedFields(audited(m), audited({ ...m, key: 'api-2' }))).to.deep.equal({
      key: { before: 'api', after: 'api-2' },
    });
  });
});
