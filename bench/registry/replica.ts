/**
 * What the two replicas of `npm run bench:registry` (replica-before.ts, replica-after.ts)
 * share: the changes to watch for, when each was first seen, their query and row counters,
 * and a tiny HTTP server (GET /readyz: 200 once the copies are complete; GET /stats).
 *
 * A replica learns which key ids and monitor ids the benchmark will change from
 * WATCH_FILE (JSON `{ "keys": [...], "monitors": [...] }`), so that noticing a change
 * costs it a look at those ids only, not a pass over its whole copy.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { loadConfig, v } from '@telemetry/platform';

/** The suffix the benchmark appends to a watched monitor's name: that is its change. */
export const CHANGED_SUFFIX = ' (changed)';

/** The ids the benchmark changes: key ids it revokes, monitor ids it renames. */
export interface Watch {
  keys: string[];
  monitors: string[];
}

/** GET /stats of a replica. */
export interface ReplicaStats {
  /** ms from the first registry query to complete copies (null until then). */
  loadMs: number | null;
  keys: number;
  monitors: number;
  /** Queries sent to the store since start, and the rows they returned. */
  queries: number;
  rows: number;
  /** process.cpuUsage() since start, user + system, µs (finer than /proc's 10 ms ticks). */
  cpuMicros: number;
  /** When each watched change was first seen (epoch ms, fractional). */
  seen: { keys: Record<string, number>; monitors: Record<string, number> };
}

/** Epoch ms with a fraction: comparable between processes of one machine. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

const replicaSpec = {
  host: v.str('HOST', '127.0.0.1', 'address of /readyz and /stats'),
  port: v.int('PORT', 0, 'port of /readyz and /stats', 0, 65535),
  watchFile: v.str('WATCH_FILE', undefined, 'JSON {keys, monitors}: the ids the benchmark will change'),
};

/** One replica's counters and observations, served over HTTP. */
export class Replica {
  queries = 0;
  rows = 0;
  private readonly config = loadConfig(replicaSpec, process.env);
  private readonly watch: { keys: Set<string>; monitors: Set<string> };
  private readonly seen = { keys: new Map<string, number>(), monitors: new Map<string, number>() };
  private startedAt: number | undefined;
  private loadMs: number | null = null;
  private server: Server | undefined;

  constructor(private readonly sizes: () => { keys: number; monitors: number }) {
    const w = JSON.parse(readFileSync(this.config.watchFile, 'utf8')) as Watch;
    this.watch = { keys: new Set(w.keys), monitors: new Set(w.monitors) };
  }

  /** Counts one query that returned `rows` rows, and passes its result on. */
  counted<T extends { length: number }>(rows: T): T {
    this.queries++;
    this.rows += rows.length;
    return rows;
  }

  /** The first load begins. */
  loading(): void {
    this.startedAt = epochMs();
  }

  /** The copies are complete: /readyz answers 200 from now on. */
  loaded(): void {
    this.loadMs = epochMs() - (this.startedAt ?? epochMs());
  }

  /** Key `id` is in the copy as revoked. */
  keyRevoked(id: string): void {
    if (this.loadMs !== null && this.watch.keys.has(id) && !this.seen.keys.has(id)) this.seen.keys.set(id, epochMs());
  }

  /** Monitor `id` is in the copy with `name`. */
  monitorNamed(id: string, name: string | undefined): void {
    if (this.loadMs === null || !this.watch.monitors.has(id) || this.seen.monitors.has(id)) return;
    if (name?.endsWith(CHANGED_SUFFIX)) this.seen.monitors.set(id, epochMs());
  }

  /** The watched ids (to look only at them in a full copy). */
  get watched(): { keys: ReadonlySet<string>; monitors: ReadonlySet<string> } {
    return this.watch;
  }

  stats(): ReplicaStats {
    return {
      loadMs: this.loadMs,
      ...this.sizes(),
      queries: this.queries,
      rows: this.rows,
      cpuMicros: ((u) => u.user + u.system)(process.cpuUsage()),
      seen: { keys: Object.fromEntries(this.seen.keys), monitors: Object.fromEntries(this.seen.monitors) },
    };
  }

  listen(): Promise<void> {
    this.server = createServer((req, res) => {
      if (req.url === '/readyz') {
        res.writeHead(this.loadMs === null ? 503 : 200).end();
      } else if (req.url === '/stats') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.stats()));
      } else {
        res.writeHead(404).end();
      }
    });
    const server = this.server;
    return new Promise((resolve) => server.listen(this.config.port, this.config.host, resolve));
  }

  /** On SIGTERM or SIGINT: `stop`, close the server, exit. */
  onSignal(stop: () => Promise<void>): void {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) {
      process.once(sig, () => {
        void stop()
          .catch((err: unknown) => process.stderr.write(`stop: ${String(err)}\n`))
          .finally(() => {
            this.server?.close();
            process.exit(0);
          });
      });
    }
  }
}
