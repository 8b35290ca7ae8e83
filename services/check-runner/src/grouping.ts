import { createHash } from 'node:crypto';
import type { Job } from './delivery.js';

export interface GroupingDeps {
  /** How long the first notification to a channel waits for others (ALERT_GROUP_WAIT_MS). */
  waitMs: number;
  /** More than this many gathered go as one message (ALERT_GROUP_THRESHOLD); fewer, each alone. */
  threshold: number;
  /** Delivers one job (Delivery.send). */
  deliver: (job: Job) => Promise<void>;
  /** Counts the messages that grouped several notifications, and how many. */
  grouped?: (count: number) => void;
}

interface Held {
  jobs: Job[];
  done: Promise<void>;
  settle: (p: Promise<void>) => void;
}

/**
 * Grouping (docs/alerting.md, "Grouping"): a notification to a channel that groups (chat,
 * email) is held ALERT_GROUP_WAIT_MS from the first one held for that channel; then, when
 * more than ALERT_GROUP_THRESHOLD gathered (many monitors failing at once), they go as ONE
 * message listing them all, otherwise each goes alone. `add` resolves once the job's
 * group (or the job alone) is delivered or given up, so the alert behind it is committed
 * only after it was sent. Paging channels and webhooks never come here.
 */
export class Grouping {
  private readonly held = new Map<string, Held>();

  constructor(private readonly deps: GroupingDeps) {}

  add(job: Job): Promise<void> {
    const key = job.channelId ?? `${job.target.type}:${JSON.stringify(job.target.config)}`;
    let h = this.held.get(key);
    if (!h) {
      let settle: (p: Promise<void>) => void = () => undefined;
      const done = new Promise<void>((resolve, reject) => {
        settle = (p) => {
          p.then(resolve, reject);
        };
      });
      const fresh: Held = { jobs: [], done, settle };
      h = fresh;
      this.held.set(key, fresh);
      const timer = setTimeout(() => {
        this.held.delete(key);
        fresh.settle(this.flush(fresh.jobs));
      }, this.deps.waitMs);
      timer.unref();
    }
    h.jobs.push(job);
    return h.done;
  }

  private async flush(jobs: Job[]): Promise<void> {
    if (jobs.length <= this.deps.threshold) {
      await Promise.all(jobs.map((j) => this.deps.deliver(j)));
      return;
    }
    this.deps.grouped?.(jobs.length);
    await this.deps.deliver(groupOf(jobs));
  }
}

/** One job carrying every item of `jobs` (all to the same channel), with an id of its own. */
export function groupOf(jobs: readonly Job[]): Job {
  const first = jobs[0]!;
  const ids = jobs.map((j) => j.notification.id).sort();
  const id = `ntf_${createHash('sha256').update(ids.join('\n')).digest('hex').slice(0, 32)}`;
  return {
    ...first,
    notification: { id, kind: first.notification.kind, items: jobs.flatMap((j) => j.notification.items) },
  };
}
