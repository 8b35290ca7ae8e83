/**
 * Config is read once at start-up from environment variables, validated, typed and
 * frozen. A bad value stops the process with a message naming the variable. Each
 * service declares its variables as a spec (name, default, doc) so that the docs
 * table can be checked against the code.
 */
export type Env = Readonly<Record<string, string | undefined>>;

export interface VarSpec<T> {
  readonly name: string;
  readonly doc: string;
  /** The default as it would be written in the environment; undefined = required. */
  readonly default: string | undefined;
  /** The value when the variable is empty and its default is '' (else the empty string). */
  readonly empty?: T;
  parse(raw: string): T;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * What every example secret we publish says (.env.example; the Helm chart publishes none):
 * anyone can read those, so a service refuses to start with one (refuseDocumentedExample).
 */
export const EXAMPLE_SECRET_MARK = 'replace-me';

/** Throws when `value` (a secret, or a key's bytes as text) is one of our published examples. */
export function refuseDocumentedExample(value: string): void {
  if (value.toLowerCase().includes(EXAMPLE_SECRET_MARK)) {
    throw new Error('is the published example value (.env.example), which anyone can read: make your own');
  }
}

function spec<T>(name: string, def: string | undefined, doc: string, parse: (raw: string) => T): VarSpec<T> {
  return { name, default: def, doc, parse };
}

export const v = {
  str(name: string, def: string | undefined, doc: string, pattern?: RegExp): VarSpec<string> {
    return spec(name, def, doc, (raw) => {
      if (pattern && !pattern.test(raw)) throw new Error(`must match ${String(pattern)}`);
      return raw;
    });
  },
  /** A secret: never echoed back in an error message. */
  secret(name: string, def: string | undefined, doc: string, check?: (raw: string) => void): VarSpec<string> {
    return spec(name, def, doc, (raw) => {
      check?.(raw);
      return raw;
    });
  },
  int(name: string, def: number | undefined, doc: string, min: number, max: number): VarSpec<number> {
    return spec(name, def === undefined ? undefined : String(def), doc, (raw) => {
      if (!/^-?\d+$/.test(raw.trim())) throw new Error('must be an integer');
      const n = Number(raw);
      if (n < min || n > max) throw new Error(`must be between ${min} and ${max}`);
      return n;
    });
  },
  bool(name: string, def: boolean, doc: string): VarSpec<boolean> {
    return spec(name, String(def), doc, (raw) => {
      const s = raw.trim().toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(s)) return true;
      if (['0', 'false', 'no', 'off'].includes(s)) return false;
      throw new Error('must be true or false');
    });
  },
  list(name: string, def: string | undefined, doc: string): VarSpec<string[]> {
    return spec(name, def, doc, (raw) => {
      const items = raw
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0);
      if (items.length === 0) throw new Error('must be a non-empty comma-separated list');
      return items;
    });
  },
  url(name: string, def: string | undefined, doc: string): VarSpec<string> {
    return spec(name, def, doc, (raw) => {
      const u = new URL(raw);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('must be an http(s) URL');
      return raw.replace(/\/+$/, '');
    });
  },
  oneOf<T extends string>(name: string, def: T, doc: string, values: readonly T[]): VarSpec<T> {
    return spec(name, def, doc, (raw) => {
      if (!(values as readonly string[]).includes(raw)) throw new Error(`must be one of ${values.join(', ')}`);
      return raw as T;
    });
  },
};

export type ConfigSpec = Record<string, VarSpec<unknown>>;
export type ConfigOf<S extends ConfigSpec> = { readonly [K in keyof S]: S[K] extends VarSpec<infer T> ? T : never };

export function loadConfig<S extends ConfigSpec>(specs: S, env: Env): ConfigOf<S> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [field, s] of Object.entries(specs)) {
    const raw = env[s.name] ?? s.default;
    if (raw === undefined || raw === '') {
      if (s.default === '') {
        out[field] = s.empty !== undefined ? s.empty : '';
        continue;
      }
      problems.push(`${s.name} is required (${s.doc})`);
      continue;
    }
    try {
      out[field] = s.parse(raw);
    } catch (err) {
      problems.push(`${s.name} ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(out) as ConfigOf<S>;
}

const TOPIC = /^[A-Za-z0-9._-]{1,200}$/;

/** Shared variable groups; each service spreads the ones it uses. */
export const logSpec = {
  logLevel: v.oneOf('LOG_LEVEL', 'info', 'winston log level', ['error', 'warn', 'info', 'debug', 'silent'] as const),
} satisfies ConfigSpec;

export const kafkaSpec = {
  kafkaBrokers: v.list('KAFKA_BROKERS', undefined, 'Kafka bootstrap servers, comma-separated host:port'),
  kafkaClientId: v.str('KAFKA_CLIENT_ID', 'telemetry', 'Kafka client id prefix'),
  kafkaClient: v.oneOf(
    'KAFKA_CLIENT',
    'platformatic',
    "the library producers and consumer groups use: platformatic (@platformatic/kafka, Kafka's idempotent producer; cheaper to send and to read in bench:ingest and bench:consume) or kafkajs (not idempotent); admin calls (topics, partition counts, group lags) use the same library",
    ['kafkajs', 'platformatic'] as const,
  ),
  topicPartitions: v.int('TOPIC_PARTITIONS', 6, 'partitions of a topic this service creates', 1, 1024),
} satisfies ConfigSpec;

/** The stream consumer's group, which the query service's hot tail follows too. */
export const consumerGroupSpec = {
  consumerGroupId: v.str(
    'CONSUMER_GROUP_ID',
    'telemetry-clickhouse-writer',
    "the stream consumer's Kafka group (the query service's hot tail reads its committed offsets, never joining it)",
  ),
};

export const topicSpec = {
  eventsTopic: v.str('EVENTS_TOPIC', 'telemetry.events', 'Kafka topic of telemetry events', TOPIC),
  checksTopic: v.str('CHECKS_TOPIC', 'monitor.check-results', 'Kafka topic of monitor check results', TOPIC),
  deadLetterTopic: v.str(
    'DEAD_LETTER_TOPIC',
    'telemetry.dead-letter',
    'Kafka topic of messages that can never be written',
    TOPIC,
  ),
  alertsTopic: v.str('ALERTS_TOPIC', 'monitor.alerts', 'Kafka topic of monitor state changes (down, up)', TOPIC),
  webhookDeliveriesTopic: v.str(
    'WEBHOOK_DELIVERIES_TOPIC',
    'monitor.webhook-deliveries',
    'Kafka topic of webhook delivery attempts (one message per attempt)',
    TOPIC,
  ),
  auditTopic: v.str(
    'AUDIT_TOPIC',
    'telemetry.audit',
    'Kafka topic of audit entries (docs/access.md, "Audit log"), written to the audit_log table',
    TOPIC,
  ),
  monitorChangesTopic: v.str(
    'MONITOR_CHANGES_TOPIC',
    'monitor.changes',
    'Kafka topic of registry change notices; its partitions divide the monitors among check runners',
    TOPIC,
  ),
  screenshotsTopic: v.str(
    'SCREENSHOTS_TOPIC',
    'monitor.screenshots',
    "Kafka topic of browser checks' failure screenshots (PNG, at most 500 KB), written to check_screenshots",
    TOPIC,
  ),
  runRequestsTopic: v.str(
    'RUN_REQUESTS_TOPIC',
    'monitor.run-requests',
    'Kafka topic of "run once now" requests from the query service to the check runners (sealed)',
    TOPIC,
  ),
  runRepliesTopic: v.str(
    'RUN_REPLIES_TOPIC',
    'monitor.run-replies',
    'Kafka topic of the check runners\' answers to "run once now" requests (sealed)',
    TOPIC,
  ),
} satisfies ConfigSpec;

export const clickhouseSpec = {
  clickhouseUrl: v.url('CLICKHOUSE_URL', undefined, 'ClickHouse HTTP URL, e.g. http://127.0.0.1:8123'),
  clickhouseUser: v.str('CLICKHOUSE_USER', 'default', 'ClickHouse user'),
  clickhousePassword: v.secret('CLICKHOUSE_PASSWORD', '', 'ClickHouse password'),
  clickhouseDatabase: v.str(
    'CLICKHOUSE_DATABASE',
    'telemetry',
    'ClickHouse database of the data tables (the legacy registry tables of before PostgreSQL, read by npm run migrate, are in its siblings `<name>_registry` and `<name>_keys`; at most 55 characters)',
    /^[A-Za-z_][A-Za-z0-9_]{0,54}$/,
  ),
  clickhouseCluster: v.str(
    'CLICKHOUSE_CLUSTER',
    '',
    'a cluster of remote_servers: migrations then run ON CLUSTER and create replicated tables (docs/clickhouse.md, "On a cluster"); empty: one server',
    /^(?:[A-Za-z_][A-Za-z0-9_]{0,63})?$/,
  ),
} satisfies ConfigSpec;

export const serviceSpec = {
  shutdownTimeoutMs: v.int('SHUTDOWN_TIMEOUT_MS', 25_000, 'hard deadline for a graceful shutdown', 1000, 600_000),
} satisfies ConfigSpec;

/**
 * What an API does with the rest of a body it answered before reading it all (a 413): it
 * reads and discards up to this much for up to this long before it closes the connection
 * (nginx's lingering close), so that clients which write the whole body before they read
 * (Python's urllib and requests) read the answer instead of a broken pipe.
 */
export const discardBodySpec = {
  discardBodyMaxBytes: v.int(
    'DISCARD_BODY_MAX_BYTES',
    32 * 1024 * 1024,
    'after an early answer (413), the rest of the body read and discarded before the connection closes; a larger declared rest is cut at once (0: always cut)',
    0,
    1024 * 1024 * 1024,
  ),
  discardBodyTimeoutMs: v.int(
    'DISCARD_BODY_TIMEOUT_MS',
    10_000,
    'how long that discarding may take before the connection is cut',
    0,
    120_000,
  ),
} satisfies ConfigSpec;

/** Every service's HTTP listener: the API, or /healthz, /readyz and /metrics alone. */
export function httpSpec(defaultPort: number, portHelp = 'HTTP port (0 picks a free one)') {
  return {
    host: v.str('HOST', '0.0.0.0', 'address to listen on'),
    port: v.int('PORT', defaultPort, portHelp, 0, 65535),
    shutdownDelayMs: v.int(
      'SHUTDOWN_DELAY_MS',
      0,
      'after SIGTERM, fail /readyz this long before closing (k8s: 5000)',
      0,
      60_000,
    ),
  } satisfies ConfigSpec;
}
