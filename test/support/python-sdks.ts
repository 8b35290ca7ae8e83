/**
 * The Python SDKs the compatibility tests run (test/e2e/compat-clients*.int.test.ts), at
 * the versions docs/compat.md lists, installed once with pip into a virtual environment
 * in the dev stack's cache directory (tools/devstack/installers.ts: DEVSTACK_CACHE_DIR,
 * else ~/.cache/telemetry-pipeline) and reused while it holds these pins.
 */
import { createHash } from 'node:crypto';
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir, run } from '../../tools/devstack/installers.js';

/** Pinned: a new version is a deliberate change here and in docs/compat.md. */
export const PYTHON_SDKS = ['segment-analytics-python==2.4.0', 'posthog==7.91.1'] as const;

/**
 * The python of a virtual environment holding PYTHON_SDKS, made once (about a minute:
 * pip fetches them from PyPI). NOTE: several test runs may make it at once: each builds
 * its own directory and renames it into place; the first rename wins (a venv's python
 * runs from a renamed directory; only its console scripts' shebangs would not).
 */
export async function ensurePythonSdks(env: NodeJS.ProcessEnv = process.env, log = (_: string) => {}): Promise<string> {
  const pins = createHash('sha256').update(PYTHON_SDKS.join('\n')).digest('hex').slice(0, 12);
  const dir = join(cacheDir(env), `python-sdks-${pins}`);
  const python = join(dir, 'bin', 'python');
  if (existsSync(join(dir, '.complete'))) return python;
  const system = env.PYTHON ?? 'python3';
  try {
    await run(system, ['-c', 'import sys, venv; assert sys.version_info >= (3, 9)']);
  } catch {
    throw new Error(
      `Python >= 3.9 with venv is needed to run the Python SDKs' tests: install python3 and python3-venv (Debian), or set PYTHON to such an interpreter (tried ${system})`,
    );
  }
  log(`installing ${PYTHON_SDKS.join(' ')} into ${dir} with pip (once)...`);
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  try {
    await run(system, ['-m', 'venv', building]);
    await run(join(building, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', ...PYTHON_SDKS], {
      maxBuffer: 64 * 1024 * 1024,
      timeout: 10 * 60_000,
    });
    writeFileSync(join(building, '.complete'), `${PYTHON_SDKS.join('\n')}\n${new Date().toISOString()}\n`);
    if (!existsSync(join(dir, '.complete'))) {
      rmSync(dir, { recursive: true, force: true });
      renameSync(building, dir);
    }
  } catch (err) {
    if (!existsSync(join(dir, '.complete'))) {
      throw new Error(`pip could not install ${PYTHON_SDKS.join(' ')} (PyPI unreachable?): ${(err as Error).message}`);
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return python;
}
