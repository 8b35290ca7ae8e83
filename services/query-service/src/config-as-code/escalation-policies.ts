import type { ConfigItem, Problem } from '@telemetry/contract';
import { policyView, type EscalationPolicyStore, type KeyedPolicy, type StoredPolicy } from '@telemetry/store';
import type { Auditor } from '../access/audit.js';
import { policyOfCreate, type PolicyDraft, type PolicyRules } from '../escalation-policy-rules.js';
import { alertingWrites } from './alerting-writes.js';
import { described, differing, type ConfigKindModule, type PlanContext } from './kind.js';

/**
 * Escalation policies as a configuration document's `escalation_policies` (docs/as-code.md):
 * each item is a POST /api/escalation-policies body with its `key`, but each step names its
 * channels by their keys; once those are ids (ctx.idOf), the item is checked by the same
 * function as that route (policyOfCreate). A policy has no secrets.
 */

export interface EscalationPolicyKindDeps extends PolicyRules {
  store: EscalationPolicyStore;
  audit: Auditor;
}

/** A policy as a document describes it: what is stored, but its version. */
export type DesiredPolicy = Omit<StoredPolicy, 'version'> & { key: string };

/** The item's fields (a create body's, but `key`). */
export const POLICY_ITEM_FIELDS = ['name', 'steps'] as const;

/**
 * The item with each step's channel keys replaced by the channels' ids, and a problem for
 * each key no channel has. NOTE: a missing key becomes a well-formed id no channel has, so
 * that the schema does not report it a second time.
 */
function withChannelIds(item: ConfigItem, ctx: PlanContext): { body: ConfigItem; problems: Problem[] } {
  const body = structuredClone(item);
  const problems: Problem[] = [];
  if (!Array.isArray(body.steps)) return { body, problems };
  body.steps.forEach((step: unknown, i) => {
    const channels = (step as { channels?: unknown } | null)?.channels;
    if (!Array.isArray(channels)) return;
    channels.forEach((key: unknown, j) => {
      if (typeof key !== 'string') return;
      const id = ctx.idOf('channels', key);
      if (id === undefined) problems.push({ path: `/steps/${i}/channels/${j}`, message: ctx.missing('channels', key) });
      channels[j] = id ?? `chn_${(i * 1000 + j).toString(16).padStart(20, '0')}`;
    });
  });
  return { body, problems };
}

function fieldsOf(p: PolicyDraft): Pick<PolicyDraft, 'name' | 'steps'> {
  return { name: p.name, steps: p.steps };
}

export function escalationPolicyConfigKind(
  deps: EscalationPolicyKindDeps,
): ConfigKindModule<KeyedPolicy, DesiredPolicy> {
  const writes = alertingWrites({
    store: deps.store,
    audit: deps.audit,
    type: 'escalation_policy',
    what: (key) => `the escalation policy ${key}`,
    view: policyView,
  });
  return {
    section: 'escalation_policies',
    kind: 'escalation_policy',

    load: (tx, tenantId) => deps.store.keyedIn(tx, tenantId),
    unkeyed: (tx, tenantId) => deps.store.unkeyedIn(tx, tenantId),
    setKey: (tx, tenantId, id, key) => deps.store.setKeyIn(tx, tenantId, id, key),

    secrets: () => new Map(),

    prepare(item, current, ctx) {
      const { body, problems } = withChannelIds(item, ctx);
      const checked = policyOfCreate(body, deps);
      if ('problems' in checked) return { problems: [...problems, ...checked.problems] };
      if (problems.length > 0) return { problems };
      return described(checked.policy, item, current, ctx);
    },

    changes(current, desired) {
      return differing(POLICY_ITEM_FIELDS, fieldsOf(current), fieldsOf(desired));
    },

    ...writes,

    exportOf(current, ctx): ConfigItem {
      // A channel without a key keeps its id: planning the export names it (there is no channel with that key).
      const steps = current.steps.map((s) => ({
        ...s,
        channels: s.channels.map((id) => ctx.keyOf('channels', id) ?? id),
      }));
      return { key: current.key, name: current.name, steps };
    },
  };
}
