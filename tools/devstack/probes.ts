/**
 * Readiness probes of the servers the dev stack and the cluster harness run: each asks
 * "does it serve clients now?" once, within about a second (an error counts as "not yet"
 * in ManagedProcess.waitAnswers): HTTP (ClickHouse's /ping, a service's /readyz), a TCP
 * port (HAProxy), Kafka (brokers, controller, every partition led), ZooKeeper (`ruok`) and
 * PostgreSQL (`SELECT 1`).
 */
import { createConnection } from 'node:net';
import type { Admin } from 'kafkajs';
import pg from 'pg';

/** GET `url` answers 2xx within a second. */
export async function httpOk(url: string): Promise<boolean> {
  const r = await fetch(url, { signal: AbortSignal.timeout(1000) });
  await r.arrayBuffer();
  return r.ok;
}

/** Something accepts connections on 127.0.0.1:`port`. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** Runs `fn` with a kafkajs admin client of `broker` alone that gives up at once (for probes). */
export async function withBrokerAdmin<T>(broker: string, fn: (admin: Admin) => Promise<T>): Promise<T> {
  const { Kafka, logLevel } = await import('kafkajs');
  const admin = new Kafka({
    brokers: [broker],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
    connectionTimeout: 1000,
  }).admin();
  try {
    await admin.connect();
    return await fn(admin);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** The broker on `port` answers, sees at least `brokers` brokers and a controller, and every partition has a leader. */
export function kafkaAnswers(port: number, brokers = 1): Promise<boolean> {
  return withBrokerAdmin(`127.0.0.1:${port}`, async (admin) => {
    const c = await admin.describeCluster();
    if (c.brokers.length < brokers || c.controller === null) return false;
    // After a restart the broker is fenced until it has caught up; it is ready for
    // clients once every partition it knows has a leader again.
    const { topics } = await admin.fetchTopicMetadata();
    return topics.every((t) => t.partitions.every((p) => p.leader >= 0));
  });
}

/** ZooKeeper answers `imok` to `ruok`. */
export function zookeeperAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write('ruok'));
    let text = '';
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('close', () => resolve(text === 'imok'));
    socket.on('error', () => resolve(false));
  });
}

/**
 * A member of a ZooKeeper ensemble serves: `srvr` names its mode (leader or follower),
 * which it does only inside a quorum (ruok answers before that).
 */
export function zookeeperServes(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write('srvr'));
    let text = '';
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('close', () => resolve(/^Mode: (leader|follower|standalone)$/m.test(text)));
    socket.on('error', () => resolve(false));
  });
}

/** PostgreSQL at `url` runs `SELECT 1`. */
export async function postgresAnswers(url: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await c.connect();
    await c.query('SELECT 1');
    return true;
  } finally {
    await c.end().catch(() => undefined);
  }
}
