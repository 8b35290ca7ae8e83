/**
 * Runs one of our small client programs (test/fixtures/clients/) in a process of its own:
 * a real tracker SDK (Segment's, PostHog's; Node or Python) sending to a host with a key,
 * reporting on its last stdout line, as JSON, what the SDK said (ids, errors). A process of
 * its own so that its clock can be moved (`faketime`) and its default flush settings
 * stay untouched by the test's.
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePythonSdks } from './python-sdks.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'clients');

/** What a client program is told: where to send, with which key, a tag its events carry, and what to send. */
export interface ClientArgs {
  host: string;
  key: string;
  /** Put in every event's identity and properties: how the test finds its rows. */
  tag: string;
  /** `events`: track, identify and page (or PostHog's). `oversized`: one event with a property of `bytes`. */
  mode: 'events' | 'oversized';
  bytes?: number;
  /** The oversized property's characters: `ascii` (default; random, so it does not compress) or `accented` ('é', 2 bytes each). */
  text?: 'ascii' | 'accented';
}

/** What a client program reports. */
export interface ClientReport {
  /** The ids the SDK gave each event it accepted (Segment's messageId, PostHog's uuid), by what it is. */
  ids: Record<string, string>;
  /** What the SDK reported as failed (its own error events, exceptions or log lines). */
  errors: string[];
  /** The client's own clock when it began and when its flush returned. */
  startedAt: string;
  endedAt: string;
}

export interface ClientRun extends ClientReport {
  stderr: string;
}

export interface RunOptions {
  /** A libfaketime offset for the process's clock (`faketime -f`), e.g. '-1h'. */
  clockOffset?: string;
  timeoutMs?: number;
}

/** Runs test/fixtures/clients/`script` (`.ts` with node and tsx, `.py` with the pinned Python SDKs' venv). */
export async function runClient(script: string, args: ClientArgs, opts: RunOptions = {}): Promise<ClientRun> {
  const python = script.endsWith('.py');
  const program = python ? await ensurePythonSdks() : process.execPath;
  let cmd = program;
  let argv = [...(python ? [] : ['--import', 'tsx']), join(FIXTURES, script), JSON.stringify(args)];
  // No __pycache__ beside our programs in the work tree.
  const env: NodeJS.ProcessEnv = { ...process.env, PYTHONDONTWRITEBYTECODE: '1' };
  if (opts.clockOffset !== undefined) {
    // NOTE: only the wall clock moves. With libfaketime's default (the monotonic clock offset
    // too) Python's timed waits (queue.get(timeout=...), segment-analytics-python's upload
    // loop) never return; timers and backoffs run on the monotonic clock, which stays true.
    env.FAKETIME_DONT_FAKE_MONOTONIC = '1';
    argv = ['-f', opts.clockOffset, program, ...argv];
    cmd = 'faketime';
  }
  const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    execFile(cmd, argv, { timeout: opts.timeoutMs ?? 60_000, maxBuffer: 16 * 1024 * 1024, env }, (err, out, errOut) => {
      if (err) {
        const why = (err as NodeJS.ErrnoException).code === 'ENOENT' && cmd === 'faketime';
        reject(
          new Error(
            why
              ? 'faketime is not installed: run `sudo apt-get install -y faketime` (Debian)'
              : `${script} failed (${err.message}):\n${errOut}\n${out}`,
          ),
        );
      } else resolve({ stdout: out, stderr: errOut });
    });
  });
  const last = stdout.trim().split('\n').pop() ?? '';
  try {
    return { ...(JSON.parse(last) as ClientReport), stderr };
  } catch {
    throw new Error(`${script} printed no report:\n${stdout}\n${stderr}`);
  }
}
