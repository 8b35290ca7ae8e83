import {
  ClickHouseLogLevel,
  createClient,
  type ClickHouseClient,
  type ErrorLogParams,
  type LogParams,
  type Logger as ClientLogger,
} from '@clickhouse/client';
import type { Component } from './lifecycle.js';
import type { Logger } from './logger.js';
import { RowEncodingError } from './row-binary.js';

export type { ClickHouseClient } from '@clickhouse/client';

export interface ClickHouseOptions {
  url: string;
  username: string;
  password: string;
  database: string;
  requestTimeoutMs?: number;
  /** ClickHouse settings sent with every query (e.g. max_execution_time). */
  settings?: Record<string, string | number>;
  /** Where the client's own log lines go (else nowhere: our code logs what it handles). */
  logger?: Logger;
  /** Sockets of this client's own pool (the client's default is 10). */
  maxOpenConnections?: number;
}

function clientLogger(logger: Logger | undefined): new () => ClientLogger {
  const log = logger?.child({ component: 'clickhouse-client' });
  const line =
    (level: string) =>
    ({ message, args, ...rest }: LogParams & { err?: Error }): void => {
      log?.log(level, message, { args, err: (rest as ErrorLogParams).err?.message });
    };
  return class implements ClientLogger {
    trace = line('debug');
    debug = line('debug');
    info = line('info');
    // A failed request is also thrown to our code, which decides how loud to be.
    warn = line('debug');
    error = line('debug');
  };
}

export function createClickHouse(opts: ClickHouseOptions): ClickHouseClient {
  return createClient({
    url: opts.url,
    username: opts.username,
    password: opts.password,
    database: opts.database,
    request_timeout: opts.requestTimeoutMs ?? 30_000,
    ...(opts.maxOpenConnections !== undefined ? { max_open_connections: opts.maxOpenConnections } : {}),
    // NOTE: keep the default settings minimal; ClickHouse 18.16 rejects unknown settings.
    clickhouse_settings: opts.settings as never,
    compression: { request: false, response: false },
    log: { LoggerClass: clientLogger(opts.logger), level: ClickHouseLogLevel.WARN },
  });
}

/**
 * A ClickHouse client as a lifecycle component. health() reflects the last ping,
 * refreshed every `pingIntervalMs`, so /readyz never waits on ClickHouse.
 */
export class ClickHouseComponent implements Component {
  private healthy = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly client: ClickHouseClient,
    private readonly logger: Logger,
    /** 0: never pinged (health() is always true): a pool for user queries, not for readiness. */
    private readonly pingIntervalMs = 2000,
    /** The gateway only reloads keys from ClickHouse: it stays ready while ClickHouse is down. */
    readonly essential = true,
    readonly name = 'clickhouse',
  ) {}

  async start(): Promise<void> {
    if (this.pingIntervalMs === 0) {
      this.healthy = true;
      return;
    }
    await this.ping();
    this.timer = setInterval(() => void this.ping(), this.pingIntervalMs);
    this.timer.unref();
  }

  private async ping(): Promise<void> {
    const r = await this.client.ping();
    if (r.success !== this.healthy) {
      this.logger.log(r.success ? 'info' : 'warn', r.success ? 'clickhouse reachable' : 'clickhouse unreachable');
    }
    this.healthy = r.success;
  }

  health(): boolean {
    return this.healthy;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.client.close();
  }
}

/** The ClickHouse variables of a service's config (clickhouseSpec). */
export interface ClickHouseConfig {
  clickhouseUrl: string;
  clickhouseUser: string;
  clickhousePassword: string;
  clickhouseDatabase: string;
  /** CLICKHOUSE_CLUSTER: migrations run ON CLUSTER and replicate ('' : one server). */
  clickhouseCluster?: string;
}

export interface ClickHouseComponentOptions extends Pick<
  ClickHouseOptions,
  'requestTimeoutMs' | 'settings' | 'maxOpenConnections'
> {
  /** Another user than CLICKHOUSE_USER (e.g. the query service's registry writer). */
  username?: string;
  password?: string;
  /** The database queries run in when they name none (default CLICKHOUSE_DATABASE). */
  database?: string;
  /** Whether /readyz fails while ClickHouse is away (default true). */
  essential?: boolean;
  /**
   * false: never pinged, never in /readyz. For pools that serve user queries, so that
   * readiness never waits behind them (a ping in a full pool would).
   */
  ping?: boolean;
  name?: string;
}

/** A service's ClickHouse client, from its config, as a lifecycle component. */
export function clickhouseComponent(
  config: ClickHouseConfig,
  logger: Logger,
  opts: ClickHouseComponentOptions = {},
): ClickHouseComponent {
  const client = createClickHouse({
    url: config.clickhouseUrl,
    username: opts.username ?? config.clickhouseUser,
    password: opts.password ?? config.clickhousePassword,
    database: opts.database ?? config.clickhouseDatabase,
    logger,
    requestTimeoutMs: opts.requestTimeoutMs,
    settings: opts.settings,
    maxOpenConnections: opts.maxOpenConnections,
  });
  const ping = opts.ping ?? true;
  return new ClickHouseComponent(
    client,
    logger,
    ping ? 2000 : 0,
    ping ? (opts.essential ?? true) : false,
    opts.name ?? 'clickhouse',
  );
}

/**
 * ClickHouse error codes that say the rows themselves cannot be stored (a value that
 * does not parse as its column's type, or is out of its range): retrying the same rows
 * fails the same way. SPLIT_ERROR_CODES say the batch as a whole is refused (too many
 * partitions in one insert block, too many parts): retried whole, it fails for ever, so it
 * is split. Every other error (connection refused or reset, timeouts, memory, a server
 * restarting) is transient and worth retrying.
 * NOTE: 117 INCORRECT_DATA is left out on purpose: ClickHouse also answers it for a
 * field the table lacks, which is a migration not yet applied, not bad data.
 */
const DATA_ERROR_CODES = new Set([
  6, // CANNOT_PARSE_TEXT
  25, // CANNOT_PARSE_ESCAPE_SEQUENCE
  26, // CANNOT_PARSE_QUOTED_STRING
  27, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  38, // CANNOT_PARSE_DATE
  41, // CANNOT_PARSE_DATETIME
  53, // TYPE_MISMATCH
  69, // ARGUMENT_OUT_OF_BOUND
  70, // CANNOT_CONVERT_TYPE
  72, // CANNOT_PARSE_NUMBER
  131, // TOO_LARGE_STRING_SIZE
  321, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
  349, // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
  376, // CANNOT_PARSE_UUID
]);

/**
 * 252 TOO_MANY_PARTS: current ClickHouse refuses an insert block spanning more than
 * `max_partitions_per_insert_block` (100) partitions with it, and every server refuses
 * an insert into a partition holding `parts_to_throw_insert` parts. Retrying the same
 * batch cannot help in the first case and makes the second worse: the batch is split,
 * and a single row still refused is dead-lettered with the reason (BatchWriter).
 */
const SPLIT_ERROR_CODES = new Set([252]);

/** The server's error code: `code` of the client's ClickHouseError, or `Code: N` in the text (18.16). */
export function clickhouseErrorCode(err: unknown): number | undefined {
  const own = (err as { code?: unknown } | null)?.code;
  if (typeof own === 'string' && /^\d+$/.test(own)) return Number(own);
  const m = /\bCode: (\d+)/.exec(err instanceof Error ? err.message : String(err));
  return m ? Number(m[1]) : undefined;
}

/**
 * What an insert error says of its rows: `rejected`, some row cannot be stored as it is;
 * `split`, the batch as a whole is refused (smaller batches may go in); `transient`,
 * retry them.
 */
export type InsertErrorClass = 'rejected' | 'split' | 'transient';

export function classifyInsertError(err: unknown): InsertErrorClass {
  if (err instanceof RowEncodingError) return 'rejected';
  const code = clickhouseErrorCode(err);
  if (code === undefined) return 'transient';
  if (DATA_ERROR_CODES.has(code)) return 'rejected';
  return SPLIT_ERROR_CODES.has(code) ? 'split' : 'transient';
}
