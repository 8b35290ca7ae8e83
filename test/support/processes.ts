import { spawn, type ChildProcess } from 'node:child_process';
import { serviceCommand, type ServiceName } from '../../harness/processes.js';
import { freePort } from '../../tools/devstack/stack.js';
import { eventually, ownUser, serviceEnv } from './fixtures.js';

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Sends `signal` and resolves when the process has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * A service as a real OS process, started the way production starts it (its main.ts
 * composition root, signal handlers on), for tests that SIGKILL or SIGTERM it.
 */
export async function spawnService(name: ServiceName, extra: Record<string, string> = {}): Promise<ServiceProcess> {
  const port = await freePort();
  let out = '';
  const [command, args] = serviceCommand(name);
  const child = spawn(command, args, {
    env: {
      ...process.env,
      ...serviceEnv({ LOG_LEVEL: 'warn', ...ownUser(name, extra), ...extra }),
      PORT: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    () => `${name} ready; output:\n${out}`,
    async () => {
      if (child.exitCode !== null) throw new Error(`${name} exited: ${out}`);
      return (await fetch(`${url}/readyz`)).ok ? true : undefined;
    },
    60_000,
  );
  return {
    url,
    child,
    output: () => out,
    kill: async (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
