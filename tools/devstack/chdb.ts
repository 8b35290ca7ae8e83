/**
 * chDB: a current ClickHouse engine in-process, for the test lane that runs our SQL on
 * current ClickHouse as well as on the 18.16 server (docs/clickhouse.md, "Two
 * engines"). It is about 550 MB, so it is not a dependency that every `npm install`
 * downloads: like the Kafka jars, it is installed from the npm registry into the cache
 * directory the first time a test asks for it, and reused after.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cacheDir } from './installers.js';
import { ManagedProcess } from './process.js';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));

/** The npm `chdb` release the lane runs (its engine is ClickHouse 26.x). */
export const CHDB_VERSION = '3.4.0';

/** The cached install of chDB (a directory with node_modules/chdb), fetched once. */
export async function ensureChdb(env: NodeJS.ProcessEnv = process.env, log = (_: string) => {}): Promise<string> {
  const dir = join(cacheDir(env), `chdb-${CHDB_VERSION}`);
  const marker = join(dir, '.complete');
  if (existsSync(marker)) return dir;
  log(`installing chdb ${CHDB_VERSION} from the npm registry into ${dir} (once, about 550 MB)...`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'chdb-cache', private: true }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefix', dir, `chdb@${CHDB_VERSION}`], {
    maxBuffer: 64 * 1024 * 1024,
  });
  writeFileSync(marker, new Date().toISOString());
  return dir;
}

export interface ChdbServer {
  /** ClickHouse HTTP URL of the engine (loopback). */
  url: string;
  stop(): Promise<void>;
}

/** chdb-server.ts as a child process on a free loopback port, over a fresh data directory. */
export async function startChdbServer(env: NodeJS.ProcessEnv = process.env): Promise<ChdbServer> {
  const moduleDir = await ensureChdb(env);
  const data = mkdtempSync(join(tmpdir(), 'chdb-'));
  const server = new ManagedProcess({
    name: 'chdb server',
    command: [process.execPath, ['--import', 'tsx', join(here, 'chdb-server.ts')]],
    env: { ...process.env, CHDB_MODULE_DIR: join(moduleDir, 'node_modules', 'chdb'), CHDB_DATA: data },
  }).start();
  const [, port] = await server.waitForLine(/listening (\d+)/, 60_000).catch(async (err: unknown) => {
    await server.stop('SIGKILL');
    throw err;
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      await server.stop('SIGTERM', null);
      rmSync(data, { recursive: true, force: true });
    },
  };
}
