/**
 * The "after" replica of `npm run bench:registry`: the registry's copies as the services
 * keep them now, composed as services/ingest-gateway/src/gateway.ts and
 * services/check-runner/src/registry.ts do: a KeyStore (keys loaded with loadKeyRecords)
 * and a Mirror of the monitors (MonitorStore.list, secrets opened) subscribed to one
 * registryFeed: a full load at start, then LISTEN/NOTIFY and a catch-up every
 * REGISTRY_CATCH_UP_MS (default 5000) that reads only what changed.
 *
 * Every query of its pool is counted (the LISTEN connection is its own and sends one
 * LISTEN). Environment: DATABASE_URL, DATABASE_POOL_MAX, DATABASE_TIMEOUT_MS,
 * REGISTRY_CATCH_UP_MS (libs/platform postgresSpec), SECRETS_KEYS, WATCH_FILE, HOST, PORT
 * (replica.ts). Started compiled by bench/registry/main.ts; SIGTERM stops it.
 */
import {
  createLogger,
  createPostgres,
  loadConfig,
  Mirror,
  postgresSpec,
  secretsSpec,
  SecretBox,
} from '@telemetry/platform';
import { KeyStore, loadKeyRecords, MonitorStore, registryFeed, type StoredMonitor } from '@telemetry/store';
import { Replica } from './replica.js';

const config = loadConfig({ ...postgresSpec, ...secretsSpec }, process.env);
const logger = createLogger({ service: 'bench-replica-after', level: 'warn' });
const pool = createPostgres(config, logger, 'bench-replica-after');
const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<{ rows: unknown[] }>;
(pool as { query: unknown }).query = async (...args: unknown[]) => {
  const result = await query(...args);
  replica.counted(result.rows);
  return result;
};

// The gateway's copy of the keys, and the runner's of the monitors (RegistryCache).
const keys = new KeyStore((ids) => loadKeyRecords(pool, ids));
const store = new MonitorStore(pool, new SecretBox(config.secretsKeys));
const monitors = new Mirror<StoredMonitor>(
  'monitors',
  (ids) => store.list(ids === undefined ? {} : { ids }),
  (m) => m.id,
  (m) => m.version,
);
const feed = registryFeed({ pool, config, name: 'bench-replica-after', logger });
feed.subscribe(keys.mirror);
feed.subscribe(monitors);
keys.mirror.onChange((ids) => {
  for (const id of ids) if (keys.mirror.get(id)?.revoked) replica.keyRevoked(id);
});
monitors.onChange((ids) => {
  for (const id of ids) replica.monitorNamed(id, monitors.get(id)?.name);
});

const replica = new Replica(() => ({ keys: keys.mirror.size, monitors: monitors.size }));
replica.onSignal(async () => {
  await feed.stop();
  await pool.end();
});
await replica.listen();
replica.loading();
await feed.start();
replica.loaded();
