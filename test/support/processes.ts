import type { ChildProcess } from 'node:child_process';
import { serviceCommand, type ServiceName } from '../../tools/devstack/commands.js';
import { freePort } from '../../tools/devstack/ports.js';
import { ManagedProcess } from '../../tools/devstack/process.js';
import { ownUser, serviceEnv } from './fixtures.js';

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Sends `signal` and resolves when the process has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * A service as a real OS process, started the way production starts it (its main.ts
 * composition root, signal handlers on), for tests that SIGKILL or SIGTERM it: the one
 * process wrapper (tools/devstack/process.ts), all of its output kept.
 */
export async function spawnService(name: ServiceName, extra: Record<string, string> = {}): Promise<ServiceProcess> {
  const port = await freePort();
  const proc = new ManagedProcess({
    name,
    command: serviceCommand(name),
    env: {
      ...process.env,
      ...serviceEnv({ LOG_LEVEL: 'warn', ...ownUser(name, extra), ...extra }),
      PORT: String(port),
    },
    keepChunks: Infinity,
  }).start();
  const url = `http://127.0.0.1:${port}`;
  await proc.waitForUrl(`${url}/readyz`, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${name}'s output:\n${proc.output()}`);
  });
  return {
    url,
    child: proc.child!,
    output: () => proc.output(),
    kill: async (signal) => void (await proc.stop(signal, null)),
  };
}
