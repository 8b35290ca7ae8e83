/**
 * The "before" replica of `npm run bench:registry`: the registry's copies as the services
 * kept them before the registry moved to PostgreSQL. Like the gateway of then, the whole
 * key table read from ClickHouse (`ClickHouseKeySource.loadAll`, `FINAL`) and indexed
 * every KEY_REFRESH_MS (2000, its default then); like the runner of then, every monitor
 * read and opened (`LegacyMonitorStore.list`) every REGISTRY_REFRESH_MS (30000), each a
 * `Snapshot` as they were (a reload starts when the previous one ended plus the interval).
 * The old runner's check "did any version change" over the whole copy is kept.
 *
 * Environment: CLICKHOUSE_URL, CLICKHOUSE_DATABASE, SECRETS_KEYS, KEY_REFRESH_MS,
 * REGISTRY_REFRESH_MS, WATCH_FILE, HOST, PORT (replica.ts). Started compiled by
 * bench/registry/main.ts; SIGTERM stops it.
 */
import {
  clickhouseSpec,
  createClickHouse,
  createLogger,
  loadConfig,
  secretsSpec,
  SecretBox,
  Snapshot,
  v,
} from '@telemetry/platform';
import {
  ClickHouseKeySource,
  indexKeys,
  LegacyMonitorStore,
  type KeyEntry,
  type StoredMonitor,
} from '@telemetry/store';
import { Replica } from './replica.js';

const config = loadConfig(
  {
    ...clickhouseSpec,
    ...secretsSpec,
    keyRefreshMs: v.int('KEY_REFRESH_MS', 2000, 'full reload of the keys (the previous default)', 100, 600_000),
    registryRefreshMs: v.int(
      'REGISTRY_REFRESH_MS',
      30_000,
      'full reload of the monitors (the previous default)',
      100,
      600_000,
    ),
  },
  process.env,
);
const logger = createLogger({ service: 'bench-replica-before', level: 'warn' });
const client = createClickHouse({
  url: config.clickhouseUrl,
  username: config.clickhouseUser,
  password: config.clickhousePassword,
  database: 'default',
  logger,
});
const source = new ClickHouseKeySource(client, config.clickhouseDatabase);
const store = new LegacyMonitorStore(client, config.clickhouseDatabase, new SecretBox(config.secretsKeys));

const keys: Snapshot<Map<string, KeyEntry>> = new Snapshot({
  name: 'key-store',
  load: async () => indexKeys(replica.counted(await source.loadAll())),
  intervalMs: config.keyRefreshMs,
  logger,
  failureMessage: 'key refresh failed',
  onLoad: (next) => {
    for (const id of replica.watched.keys) if (next.get(id)?.revoked) replica.keyRevoked(id);
  },
});
const monitors: Snapshot<Map<string, StoredMonitor>> = new Snapshot({
  name: 'registry',
  load: async () => new Map(replica.counted(await store.list()).map((m) => [m.id, m])),
  intervalMs: config.registryRefreshMs,
  logger,
  failureMessage: 'registry reload failed',
  onLoad: (next, previous = new Map<string, StoredMonitor>()) => {
    // The runner of then: whether anything changed decided a reconcile.
    const changed =
      next.size !== previous.size || [...next.values()].some((m) => previous.get(m.id)?.version !== m.version);
    if (changed) for (const id of replica.watched.monitors) replica.monitorNamed(id, next.get(id)?.name);
  },
});

const replica: Replica = new Replica(() => ({ keys: keys.value()?.size ?? 0, monitors: monitors.value()?.size ?? 0 }));
replica.onSignal(async () => {
  await keys.stop();
  await monitors.stop();
  await client.close();
});
await replica.listen();
replica.loading();
// The gateway and the runner were separate processes: their first loads ran side by side.
await Promise.all([keys.start(), monitors.start()]);
replica.loaded();
