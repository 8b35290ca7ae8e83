/**
 * How our own programs are started as processes under the pinned Node: a service's
 * composition root (its `tsc -b` output, as production runs it, or its main.ts through
 * tsx) and one of our scripts (compiled by tsconfig.dev.json, or through tsx). Used by
 * npm start, the harness (benchmarks, fault suite, soak) and the tests.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from './process.js';

/** The repository's root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const SERVICE_NAMES = ['ingest-gateway', 'stream-consumer', 'query-service', 'check-runner'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

// NOTE: kafkajs 2.2.4 schedules a negative timeout when idle (harmless; it fires at once).
const NODE_FLAGS = ['--disable-warning=TimeoutNegativeWarning'];

/**
 * V8 flags one service runs with, wherever it runs (the Dockerfile's CMD gives the same).
 * The query service keeps its young generation at 16 MB semi-spaces from the start: without
 * `--min-semi-space-size` V8 shrinks it to about 1 MB after an idle spell, and the next burst
 * of first pages scavenges 28-54 times in 5 s instead of 4-6, with 100-300 ms of pauses in
 * all (bench:query's paced first page; BENCHMARKS.md, "Issue 48: deep pages and the paced
 * first page"). Node refuses this flag in NODE_OPTIONS, so it is an argument. It commits 32 MB
 * from the start, which the gateway's RSS goal could not afford; the query service's memory
 * is its hot tail's.
 */
export const SERVICE_NODE_FLAGS: Readonly<Partial<Record<ServiceName, readonly string[]>>> = {
  'query-service': ['--min-semi-space-size=16'],
};

/** Node arguments that run our TypeScript sources (tsx, the `source` export condition). */
export const SOURCE_NODE_ARGS: readonly string[] = ['--conditions=source', ...NODE_FLAGS, '--import', 'tsx'];

/**
 * A service's composition root under the pinned Node, with its SERVICE_NODE_FLAGS: `compiled`,
 * its `tsc -b` output (services/<name>/dist/main.js) under plain node, as production runs it;
 * else its main.ts through tsx (npm start, the tests).
 */
export function serviceCommand(name: ServiceName, compiled = false): Command {
  const dir = join(ROOT, 'services', name);
  const own = SERVICE_NODE_FLAGS[name] ?? [];
  return compiled
    ? [process.execPath, [...NODE_FLAGS, ...own, join(dir, 'dist', 'main.js')]]
    : [process.execPath, [...SOURCE_NODE_ARGS, ...own, join(dir, 'src', 'main.ts')]];
}

/** One of our scripts (e.g. bench/ingest/baseline.ts): compiled by tsconfig.dev.json into .tsout/, or through tsx. */
export function scriptCommand(path: string, compiled = false): Command {
  return compiled
    ? [process.execPath, [...NODE_FLAGS, join(ROOT, '.tsout', path.replace(/\.ts$/, '.js'))]]
    : [process.execPath, [...SOURCE_NODE_ARGS, join(ROOT, path)]];
}
