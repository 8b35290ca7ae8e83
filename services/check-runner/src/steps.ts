import type { IncidentAlertState, IncidentProgress, PolicyStep, ReminderState, StoredChannel } from '@telemetry/store';

/**
 * An incident's steps and what is due on them (docs/alerting.md, "Escalation" and
 * "Reminders"): pure, so the dispatcher (which opens an incident's row) and the escalation
 * clock (which works its due rows) agree on every time.
 */

/** What of a channel the timing reads. */
export type Reminding = Pick<StoredChannel, 'id' | 'remind_every_seconds' | 'remind_max'>;

/**
 * An incident's steps: its monitor's policy's, with the monitor's own `channels` joining
 * the first; without a policy (or one deleted since), one step of its `channels`; none
 * when it has neither.
 */
export function stepsOf(monitorChannels: readonly string[], policy: readonly PolicyStep[] | undefined): PolicyStep[] {
  if (policy && policy.length > 0) {
    const [first, ...rest] = policy;
    return [{ ...first!, channels: [...new Set([...first!.channels, ...monitorChannels])] }, ...rest];
  }
  return monitorChannels.length > 0 ? [{ channels: [...monitorChannels] }] : [];
}

/** The channels of steps 0..`step`, each once, in order. */
export function channelsUpTo(steps: readonly PolicyStep[], step: number): string[] {
  return [...new Set(steps.slice(0, step + 1).flatMap((s) => s.channels))];
}

/** A delay in seconds as ms, raised to the minimum (ALERT_MIN_DELAY_SECONDS): older rows may hold shorter ones. */
function delayMs(seconds: number, minSeconds: number): number {
  return Math.max(seconds, minSeconds) * 1000;
}

/** When the step after the current one is due; undefined when there is none. */
export function escalationDueAt(
  s: Pick<IncidentAlertState, 'steps' | 'step' | 'step_at'>,
  minSeconds: number,
): number | undefined {
  const after = s.steps[s.step]?.escalate_after_seconds;
  if (after === undefined || s.step + 1 >= s.steps.length) return undefined;
  return s.step_at + delayMs(after, minSeconds);
}

/** When `c`'s next reminder is due; undefined when it has none or sent them all. */
export function reminderDueAt(
  c: Reminding,
  r: ReminderState | undefined,
  since: number,
  minSeconds: number,
): number | undefined {
  if (c.remind_every_seconds <= 0 || (r?.sent ?? 0) >= c.remind_max) return undefined;
  return (r?.last_at ?? since) + delayMs(c.remind_every_seconds, minSeconds);
}

/** The earliest of the times given; null when none. */
function earliest(times: readonly (number | undefined)[]): number | null {
  const set = times.filter((t): t is number => t !== undefined);
  return set.length === 0 ? null : Math.min(...set);
}

/** When anything of `s` is next due (the next step, a channel's reminder); null when nothing can be. */
export function nextDueAt(
  s: Pick<IncidentAlertState, 'steps' | 'step' | 'step_at' | 'reminders' | 'opened_at'>,
  channels: ReadonlyMap<string, Reminding>,
  minSeconds: number,
): number | null {
  const reminders = channelsUpTo(s.steps, s.step).map((id) => {
    const c = channels.get(id);
    return c ? reminderDueAt(c, s.reminders[id], s.opened_at, minSeconds) : undefined;
  });
  return earliest([escalationDueAt(s, minSeconds), ...reminders]);
}

/** What the clock sends for a claimed row at `now`, and the row's progress after. */
export interface DuePlan {
  /** The step notified now (0-based), if the incident escalates. */
  escalateTo?: number;
  /** Reminders due now: the channel and the reminder's number (1-based). */
  reminders: { channelId: string; n: number }[];
  progress: IncidentProgress;
}

/**
 * What is due on `s` at `now`: the next step when its delay passed (its channels' reminders
 * count from now), and each reminder due of the channels notified so far (capped by
 * remind_max). `channels` holds the channels of every step up to the next (a deleted one is
 * left out, and so is never reminded).
 */
export function planDue(
  s: IncidentAlertState,
  channels: ReadonlyMap<string, Reminding>,
  now: number,
  min: number,
): DuePlan {
  const reminders: DuePlan['reminders'] = [];
  const state: Record<string, ReminderState> = { ...s.reminders };
  for (const id of channelsUpTo(s.steps, s.step)) {
    const c = channels.get(id);
    const due = c ? reminderDueAt(c, state[id], s.opened_at, min) : undefined;
    if (due === undefined || due > now) continue;
    const n = (state[id]?.sent ?? 0) + 1;
    reminders.push({ channelId: id, n });
    state[id] = { sent: n, last_at: now };
  }
  let { step, step_at } = s;
  const escalation = escalationDueAt(s, min);
  const escalateTo = escalation !== undefined && escalation <= now ? s.step + 1 : undefined;
  if (escalateTo !== undefined) {
    step = escalateTo;
    step_at = now;
    // A channel new to the incident counts its reminders from its first notification.
    for (const id of s.steps[escalateTo]!.channels) state[id] ??= { sent: 0, last_at: now };
  }
  const after = { ...s, step, step_at, reminders: state };
  return {
    ...(escalateTo === undefined ? {} : { escalateTo }),
    reminders,
    progress: { step, step_at, reminders: state, next_due_at: nextDueAt(after, channels, min) },
  };
}
