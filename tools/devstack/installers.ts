/**
 * The server programs the dev stack and the cluster harness run, found on this machine or
 * installed once: Debian's clickhouse-server, postgresql and haproxy with apt-get (as
 * root; otherwise the error says what to install), and Apache Kafka's, its tools' and
 * ZooKeeper's jars copied from Maven Central with `mvn dependency:copy-dependencies`
 * (tools/devstack/<name>/pom.xml) into the cache directory; Mailpit (a real SMTP server for
 * the tests and `npm start`) built once with `go install` into the cache directory.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const run = promisify(execFile);
/** tools/devstack, where the poms and Kafka's log4j.properties are. */
export const here = dirname(fileURLToPath(import.meta.url));

export const KAFKA_VERSION = '4.1.1';
export const ZOOKEEPER_VERSION = '3.9.3';
export const MAILPIT_VERSION = '1.33.1';

export function cacheDir(env: NodeJS.ProcessEnv): string {
  return env.DEVSTACK_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'telemetry-pipeline');
}

async function which(cmd: string): Promise<string | undefined> {
  try {
    const { stdout } = await run('sh', ['-c', `command -v ${cmd}`]);
    return stdout.trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Debian `packages` with apt-get, as root; else an error that says what to run (`orElse`: or what to set). */
async function aptInstall(packages: string[], log: (l: string) => void, orElse = ''): Promise<void> {
  if (process.getuid?.() !== 0) {
    throw new Error(`${packages[0]} is not installed: run \`sudo apt-get install -y ${packages.join(' ')}\`${orElse}`);
  }
  log(`installing ${packages[0]} with apt-get (once)...`);
  const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env: aptEnv, maxBuffer: 64 * 1024 * 1024 });
  await run('apt-get', ['install', '-y', '-qq', ...packages], { env: aptEnv, maxBuffer: 64 * 1024 * 1024 });
}

/** Debian's clickhouse-server, installed with apt-get when missing. */
export async function ensureClickHouse(log: (l: string) => void): Promise<string> {
  const found = await which('clickhouse-server');
  if (found) return found;
  await aptInstall(['clickhouse-server', 'clickhouse-client'], log, ', or set CLICKHOUSE_URL');
  const installed = await which('clickhouse-server');
  if (!installed) throw new Error('apt-get installed clickhouse-server but it is not on PATH');
  return installed;
}

/** Debian's haproxy, installed with apt-get when missing (as root). */
export async function ensureHaproxy(log: (l: string) => void): Promise<string> {
  const found = await which('haproxy');
  if (found) return found;
  await aptInstall(['haproxy'], log);
  return '/usr/sbin/haproxy';
}

/** The bin directory of the newest PostgreSQL installed (Debian's postgresql), installed with apt-get when missing. */
export async function ensurePostgres(log: (l: string) => void): Promise<string> {
  const found = (): string | undefined => {
    if (!existsSync('/usr/lib/postgresql')) return undefined;
    const versions = readdirSync('/usr/lib/postgresql')
      .filter((v) => existsSync(join('/usr/lib/postgresql', v, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a));
    return versions[0] ? join('/usr/lib/postgresql', versions[0], 'bin') : undefined;
  };
  const dir = found();
  if (dir) return dir;
  await aptInstall(['postgresql'], log, ', or set DATABASE_URL');
  const installed = found();
  if (!installed) throw new Error('apt-get installed postgresql but /usr/lib/postgresql/*/bin/postgres is missing');
  return installed;
}

/** A client program of the newest PostgreSQL installed (pg_dump, pg_restore, psql), installing it when missing. */
export async function postgresTool(name: string, log: (l: string) => void = () => undefined): Promise<string> {
  return join(await ensurePostgres(log), name);
}

/** Apache Kafka's jars from Maven Central, fetched once into the cache. */
export function ensureKafkaJars(env: NodeJS.ProcessEnv, log: (l: string) => void): Promise<string> {
  return ensureMavenJars(env, log, 'kafka', `kafka-${KAFKA_VERSION}`, `Apache Kafka ${KAFKA_VERSION}`);
}

/**
 * Apache Kafka's own tools (ProducerPerformance, ConsumerPerformance: the benchmarks'
 * anchors), same version as the broker, fetched on first use into the cache.
 */
export function ensureKafkaTools(env: NodeJS.ProcessEnv = process.env, log = (_: string) => {}): Promise<string> {
  return ensureMavenJars(env, log, 'kafka-tools', `kafka-tools-${KAFKA_VERSION}`, `Kafka ${KAFKA_VERSION} tools`);
}

/** Apache ZooKeeper's jars (the cluster harness's ClickHouse replicas), fetched once into the cache. */
export function ensureZookeeperJars(env: NodeJS.ProcessEnv, log: (l: string) => void): Promise<string> {
  const what = `Apache ZooKeeper ${ZOOKEEPER_VERSION}`;
  return ensureMavenJars(env, log, 'zookeeper', `zookeeper-${ZOOKEEPER_VERSION}`, what);
}

/** The runtime jars of tools/devstack/<pom>/pom.xml, copied from Maven Central into the cache once. */
async function ensureMavenJars(
  env: NodeJS.ProcessEnv,
  log: (l: string) => void,
  pom: string,
  name: string,
  what: string,
): Promise<string> {
  const dir = join(cacheDir(env), name);
  const marker = join(dir, '.complete');
  if (existsSync(marker)) return dir;
  if (!(await which('mvn')) || !(await which('java'))) {
    throw new Error(
      'Java and Maven are needed to fetch and run Kafka: install openjdk-17-jre-headless and maven, or set KAFKA_BROKERS',
    );
  }
  log(`fetching ${what} jars from Maven Central (once)...`);
  mkdirSync(dir, { recursive: true });
  await run(
    'mvn',
    ['-q', '-B', '-f', join(here, pom, 'pom.xml'), 'dependency:copy-dependencies', `-DoutputDirectory=${dir}`],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  writeFileSync(marker, new Date().toISOString());
  return dir;
}

/**
 * Mailpit's binary, built once from the Go module proxy with `go install` (about 45 s) into
 * the cache. NOTE: several runs may build it at once (parallel test runs on one machine):
 * each builds into its own directory and renames it into place; the first rename wins.
 */
export async function ensureMailpit(env: NodeJS.ProcessEnv, log: (l: string) => void): Promise<string> {
  const dir = join(cacheDir(env), `mailpit-${MAILPIT_VERSION}`);
  const bin = join(dir, 'mailpit');
  if (existsSync(bin)) return bin;
  // The official Go toolchain's usual place when it is not on PATH. NOTE: Mailpit 1.33 needs Go >= 1.26
  // (Debian 12's golang-go is 1.19; a Go >= 1.21 fetches the toolchain it needs from the module proxy).
  const go = (await which('go')) ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) {
    throw new Error(
      'Go (>= 1.21) is needed to build Mailpit, the test SMTP server: install it (https://go.dev/dl/), or set MAILPIT_SMTP_URL and MAILPIT_API_URL',
    );
  }
  log(`building Mailpit ${MAILPIT_VERSION} with go install (once)...`);
  const building = `${dir}.building-${process.pid}`;
  mkdirSync(building, { recursive: true });
  try {
    await run(go, ['install', `github.com/axllent/mailpit@v${MAILPIT_VERSION}`], {
      env: { ...process.env, GOBIN: building },
      maxBuffer: 64 * 1024 * 1024,
      timeout: 15 * 60_000,
    });
    if (!existsSync(bin)) renameSync(building, dir);
  } catch (err) {
    if (!existsSync(bin)) throw err;
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return bin;
}
