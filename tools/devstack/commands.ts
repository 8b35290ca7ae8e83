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

/** Node arguments that run our TypeScript sources (tsx, the `source` export condition). */
export const SOURCE_NODE_ARGS: readonly string[] = ['--conditions=source', ...NODE_FLAGS, '--import', 'tsx'];

/**
 * A service's composition root under the pinned Node: `compiled`, its `tsc -b` output
 * (services/<name>/dist/main.js) under plain node, as production runs it; else its main.ts
 * through tsx (npm start, the tests).
 */
export function serviceCommand(name: ServiceName, compiled = false): Command {
  const dir = join(ROOT, 'services', name);
  return compiled
    ? [process.execPath, [...NODE_FLAGS, join(dir, 'dist', 'main.js')]]
    : [process.execPath, [...SOURCE_NODE_ARGS, join(dir, 'src', 'main.ts')]];
}

/** One of our scripts (e.g. bench/ingest/baseline.ts): compiled by tsconfig.dev.json into .tsout/, or through tsx. */
export function scriptCommand(path: string, compiled = false): Command {
  return compiled
    ? [process.execPath, [...NODE_FLAGS, join(ROOT, '.tsout', path.replace(/\.ts$/, '.js'))]]
    : [process.execPath, [...SOURCE_NODE_ARGS, join(ROOT, path)]];
}
