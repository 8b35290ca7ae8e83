import { expect } from 'chai';
import { missingMessage } from '../../services/query-service/src/config-as-code/engine.js';
import type { Request, Response } from 'express';
import {
  createChannelValidators,
  createValidators,
  type ConfigItem,
  type ConfigSection,
  type SecretPin,
} from '@telemetry/contract';
import { EgressPolicy, newSealingKeyText, parseSealingKeys, SecretBox } from '@telemetry/platform';
import type { ChannelStore, EscalationPolicyStore, KeyedChannel, KeyedPolicy } from '@telemetry/store';
import type { Auditor } from '../../services/query-service/src/access/audit.js';
import { channelConfigKind } from '../../services/query-service/src/config-as-code/channels.js';
import { escalationPolicyConfigKind } from '../../services/query-service/src/config-as-code/escalation-policies.js';
import type {
  ConfigKindModule,
  ExportContext,
  ManagedObject,
  PlanContext,
  Prepared,
} from '../../services/query-service/src/config-as-code/kind.js';

/**
 * The configuration kinds of alert channels and escalation policies (docs/as-code.md):
 * problems at the item's paths by the routes' own rules, no change for an item that
 * describes the stored object (also after an export and back), secrets as fingerprints.
 */
describe('config as code: channel and escalation policy kinds (unit)', () => {
  const tenantId = 'ten_kinds';
  const validators = createValidators();
  const channelValidators = createChannelValidators();
  const policy = new EgressPolicy();
  const noAudit: Auditor = { record: () => Promise.resolve(), denied: () => Promise.resolve() };
  const rules = { validators, channelValidators, policy, minDelaySeconds: 60, audit: noAudit };
  const channels = channelConfigKind({ ...rules, store: {} as ChannelStore });
  const policies = escalationPolicyConfigKind({ ...rules, store: {} as EscalationPolicyStore });
  const box = new SecretBox(parseSealingKeys(newSealingKeyText('k1')));

  const channelIds = new Map([
    ['ops-hook', 'chn_00000000000000000001'],
    ['pager', 'chn_00000000000000000002'],
  ]);
  let made = 0;
  const plan: PlanContext = {
    tenantId,
    idOf: (section: ConfigSection, key: string) => (section === 'channels' ? channelIds.get(key) : undefined),
    missing: (section, key) => missingMessage(section, key, new Map()),
    newId: () => `chn_${String(++made).padStart(20, 'a')}`,
  };
  const exporting: ExportContext = {
    tenantId,
    keyOf: (section, id) => (section === 'channels' ? [...channelIds].find(([, v]) => v === id)?.[0] : undefined),
    fingerprint: (value) => box.fingerprint(value, tenantId),
  };

  const desiredOf = <D>(p: Prepared<D>): D => {
    if ('problems' in p) throw new Error(`unexpected problems: ${JSON.stringify(p.problems)}`);
    return p.desired;
  };
  const problemsOf = <D>(p: Prepared<D>) => ('problems' in p ? p.problems : []);
  /** The object the registry holds after a create of `desired`. */
  const stored = <C extends ManagedObject>(desired: Omit<C, 'version'>): C => ({ ...desired, version: 3 }) as C;

  /** What the engine does with an exported item: each SecretPin whose fingerprint matches the stored value becomes it. */
  function resolvePins<C extends ManagedObject>(kind: ConfigKindModule<C>, current: C, item: ConfigItem): ConfigItem {
    const out = structuredClone(item) as Record<string, unknown>;
    for (const [path, value] of kind.secrets(current)) {
      const parts = path.split('/').slice(1);
      let node = out;
      for (const p of parts.slice(0, -1)) node = node[p] as Record<string, unknown>;
      const pin = node[parts[parts.length - 1]!] as SecretPin;
      expect(box.fingerprintMatches(pin.fingerprint, value, tenantId), path).to.equal(true);
      node[parts[parts.length - 1]!] = value;
    }
    return out as ConfigItem;
  }

  const webhookItem: ConfigItem = {
    key: 'ops-hook',
    type: 'webhook',
    name: 'Ops hook',
    config: { url: 'https://ops.example.com/hook?token=abc', secret: 'a-webhook-secret-of-enough-length' },
  };

  describe('channels', () => {
    it('report every problem of an item at its path, by the routes rules (reminders, templates, egress)', () => {
      const bad = channels.prepare(
        {
          key: 'bad',
          type: 'webhook',
          name: 'Bad',
          remind_every_seconds: 10,
          templates: { title: '{{nope}}' },
          config: { url: 'http://127.0.0.3/hook', secret: 'a-webhook-secret-of-enough-length' },
        },
        undefined,
        plan,
      );
      expect(problemsOf(bad).map((p) => p.path)).to.deep.equal([
        '/remind_every_seconds',
        '/templates/title',
        '/config/url',
      ]);
      const schema = channels.prepare({ key: 'Not A Key', type: 'fax', name: '', config: {} }, undefined, plan);
      expect(problemsOf(schema).map((p) => p.path)).to.include.members(['/key', '/type', '/name']);
      const config = channels.prepare({ key: 'x', type: 'slack', name: 'S', config: { url: 'nope' } }, undefined, plan);
      expect([...new Set(problemsOf(config).map((p) => p.path))]).to.deep.equal(['/config/url']);
    });

    it('take the create defaults for what an item leaves out, and see no change in an item equal to the stored channel', () => {
      const created = desiredOf(channels.prepare(webhookItem, undefined, plan));
      expect(created).to.deep.include({
        key: 'ops-hook',
        tenant_id: tenantId,
        send_resolved: true,
        remind_every_seconds: 0,
        remind_max: 3,
        templates: {},
      });
      expect(created.id).to.match(/^chn_/);
      const current = stored<KeyedChannel>(created);
      // The same item again, and the item with the defaults written out (keys in another order).
      expect(channels.changes(current, desiredOf(channels.prepare(webhookItem, current, plan)))).to.deep.equal([]);
      const explicit = {
        templates: {},
        remind_max: 3,
        remind_every_seconds: 0,
        send_resolved: true,
        ...webhookItem,
        config: { secret: 'a-webhook-secret-of-enough-length', url: 'https://ops.example.com/hook?token=abc' },
      };
      const again = desiredOf(channels.prepare(explicit, current, plan));
      expect(again.id).to.equal(current.id);
      expect(channels.changes(current, again)).to.deep.equal([]);
    });

    it('name each field that differs, a secret by its value', () => {
      const current = stored<KeyedChannel>(desiredOf(channels.prepare(webhookItem, undefined, plan)));
      const changed = (over: Record<string, unknown>) =>
        channels.changes(current, desiredOf(channels.prepare({ ...webhookItem, ...over }, current, plan)));
      expect(changed({ name: 'Renamed', remind_max: 5 })).to.deep.equal(['name', 'remind_max']);
      expect(
        changed({
          config: { url: 'https://ops.example.com/hook?token=abc', secret: 'another-secret-of-enough-length' },
        }),
      ).to.deep.equal(['config']);
      expect(changed({ type: 'slack', config: { url: 'https://hooks.example.com/services/T0/B0/xyz' } })).to.deep.equal(
        ['type', 'config'],
      );
    });

    it('export secrets as fingerprints only, and an export planned back changes nothing', () => {
      const email: ConfigItem = {
        key: 'mail',
        type: 'email',
        name: 'Mail',
        send_resolved: false,
        templates: { title: '{{title}}' },
        config: {
          to: ['ops@example.com'],
          smtp: { url: 'smtps://u:p4ss@mail.example.com:465', from: 'a@example.com' },
        },
      };
      for (const item of [webhookItem, email]) {
        const current = stored<KeyedChannel>(desiredOf(channels.prepare(item, undefined, plan)));
        const secrets = channels.secrets(current);
        const exported = channels.exportOf(current, exporting);
        const text = JSON.stringify(exported);
        for (const value of secrets.values()) expect(text).to.not.contain(value);
        expect(text).to.not.contain('p4ss');
        const back = resolvePins(channels, current, exported);
        expect(channels.changes(current, desiredOf(channels.prepare(back, current, plan)))).to.deep.equal([]);
      }
      const webhook = stored<KeyedChannel>(desiredOf(channels.prepare(webhookItem, undefined, plan)));
      expect([...channels.secrets(webhook)]).to.deep.equal([
        ['/config/url', 'https://ops.example.com/hook?token=abc'],
        ['/config/secret', 'a-webhook-secret-of-enough-length'],
      ]);
      const mail = stored<KeyedChannel>(desiredOf(channels.prepare(email, undefined, plan)));
      expect([...channels.secrets(mail).keys()]).to.deep.equal(['/config/smtp/url']);
      const pin = (channels.exportOf(mail, exporting).config as { smtp: { url: SecretPin } }).smtp.url;
      expect(pin.fingerprint).to.match(/^fp1\.k1\./);
    });
  });

  describe('escalation policies', () => {
    const policyItem: ConfigItem = {
      key: 'on-call',
      name: 'On call',
      steps: [{ channels: ['ops-hook'], escalate_after_seconds: 600 }, { channels: ['pager', 'ops-hook'] }],
    };

    it('name channels by key (ids once prepared) and report a missing key and a short delay at their paths', () => {
      const p = desiredOf(policies.prepare(policyItem, undefined, plan));
      expect(p.steps).to.deep.equal([
        { channels: ['chn_00000000000000000001'], escalate_after_seconds: 600 },
        { channels: ['chn_00000000000000000002', 'chn_00000000000000000001'] },
      ]);
      const bad = policies.prepare(
        {
          key: 'bad',
          name: 'Bad',
          steps: [{ channels: ['ops-hook', 'gone'], escalate_after_seconds: 5 }, { channels: [] }],
        },
        undefined,
        plan,
      );
      const problems = problemsOf(bad);
      expect(problems).to.deep.include({ path: '/steps/0/channels/1', message: 'there is no channel with key gone' });
      expect(problems.map((x) => x.path)).to.include('/steps/1/channels');
      const short = policies.prepare(
        { key: 'short', name: 'Short', steps: [{ channels: ['pager'], escalate_after_seconds: 5 }] },
        undefined,
        plan,
      );
      expect(problemsOf(short).map((x) => x.path)).to.deep.equal(['/steps/0/escalate_after_seconds']);
    });

    it('see no change in an equal item or its export, and name the fields that differ', () => {
      const current = stored<KeyedPolicy>(desiredOf(policies.prepare(policyItem, undefined, plan)));
      expect(policies.changes(current, desiredOf(policies.prepare(policyItem, current, plan)))).to.deep.equal([]);
      const exported = policies.exportOf(current, exporting);
      expect(exported).to.deep.equal(policyItem);
      expect([...policies.secrets(current)]).to.deep.equal([]);
      expect(policies.changes(current, desiredOf(policies.prepare(exported, current, plan)))).to.deep.equal([]);
      // A channel without a key is exported as its id, which planning reports (it names no channel).
      const unmanaged = { ...current, steps: [{ channels: ['chn_0000000000000000ffff'] }] };
      const withId = policies.exportOf(unmanaged, exporting);
      expect(withId.steps).to.deep.equal([{ channels: ['chn_0000000000000000ffff'] }]);
      expect(problemsOf(policies.prepare(withId, current, plan))).to.deep.equal([
        {
          path: '/steps/0/channels/0',
          message:
            'chn_0000000000000000ffff has no key: give it one (telemetry export --adopt, POST /api/config/adopt)',
        },
      ]);
      const reordered = {
        ...policyItem,
        steps: [{ channels: ['ops-hook'], escalate_after_seconds: 600 }, { channels: ['ops-hook', 'pager'] }],
      };
      expect(policies.changes(current, desiredOf(policies.prepare(reordered, current, plan)))).to.deep.equal(['steps']);
      expect(
        policies.changes(current, desiredOf(policies.prepare({ ...policyItem, name: 'x' }, current, plan))),
      ).to.deep.equal(['name']);
    });
  });

  it('audit nothing before the apply committed (the writes return what to do after)', async () => {
    // A fake transaction for the store's In forms: the kind writes through them and returns a callback.
    let audited = 0;
    const audit: Auditor = { record: () => Promise.resolve(void audited++), denied: () => Promise.resolve() };
    const created: unknown[] = [];
    const store = {
      createIn: (_tx: unknown, c: unknown) => Promise.resolve(created.push(c) && { ...(c as object), version: 1 }),
    } as unknown as ChannelStore;
    const kind = channelConfigKind({ ...rules, audit, store });
    const desired = desiredOf(kind.prepare(webhookItem, undefined, plan));
    const after = await kind.create({} as never, desired, {
      tenantId,
      req: {} as Request,
      res: { locals: {} } as unknown as Response,
    });
    expect(created).to.have.length(1);
    expect(audited).to.equal(0);
    await after();
    expect(audited).to.equal(1);
  });
});
