import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export type ServiceName = 'ingest-gateway' | 'stream-consumer' | 'query-service' | 'check-runner';

/**
 * How the dev tools, tests and benchmarks start a service as its own process: its
 * composition root (main.ts) under the pinned Node, from source.
 */
export function serviceCommand(name: ServiceName): [command: string, args: string[]] {
  return [process.execPath, [...SOURCE_NODE_ARGS, serviceMain(name)]];
}

/** Node arguments that run our TypeScript sources (tsx, the `source` export condition). */
export const SOURCE_NODE_ARGS: readonly string[] = [
  '--conditions=source',
  // NOTE: kafkajs 2.2.4 schedules a negative timeout when idle (harmless; it fires at once).
  '--disable-warning=TimeoutNegativeWarning',
  '--import',
  'tsx',
];

export function serviceMain(name: ServiceName): string {
  return join(root, 'services', name, 'src', 'main.ts');
}
