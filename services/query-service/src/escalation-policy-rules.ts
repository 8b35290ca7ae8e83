import { describeErrors, type Problem, type Validators } from '@telemetry/contract';
import type { PolicyStep, StoredPolicy } from '@telemetry/store';

/**
 * What an escalation policy must be (docs/alerting.md, "Escalation policies"), for its
 * routes and a configuration document's policies (config-as-code/escalation-policies.ts)
 * alike: its body's schema, then each step's delay. That its channels are the tenant's is
 * checked in the transaction that stores it (EscalationPolicyStore).
 */

export interface PolicyRules {
  validators: Validators;
  /** ALERT_MIN_DELAY_SECONDS: the shortest escalation delay. */
  minDelaySeconds: number;
}

/** A policy as a create body describes it (what is stored, but for id, tenant and times). */
export type PolicyDraft = Pick<StoredPolicy, 'key' | 'name' | 'steps'>;

/** Every step's delay is at least ALERT_MIN_DELAY_SECONDS. */
export function shortDelayProblems(steps: readonly PolicyStep[], minDelaySeconds: number): Problem[] {
  return steps.flatMap((s, i) =>
    s.escalate_after_seconds !== undefined && s.escalate_after_seconds < minDelaySeconds
      ? [
          {
            path: `/steps/${i}/escalate_after_seconds`,
            message: `must be at least ${minDelaySeconds} (ALERT_MIN_DELAY_SECONDS)`,
          },
        ]
      : [],
  );
}

/** A create body (POST /api/escalation-policies, or a document's item with its channel keys made ids) checked. */
export function policyOfCreate(body: unknown, rules: PolicyRules): { policy: PolicyDraft } | { problems: Problem[] } {
  if (!rules.validators.escalationPolicyCreate(body)) {
    return { problems: describeErrors(rules.validators.escalationPolicyCreate.errors) };
  }
  const problems = shortDelayProblems(body.steps, rules.minDelaySeconds);
  if (problems.length > 0) return { problems };
  return { policy: { key: body.key ?? null, name: body.name, steps: body.steps } };
}
