/**
 * ClickHouse's RowBinary input format, written from row objects: each column's value in
 * the order of the column list, with no names, no separators and nothing to parse on
 * the server's side (docs.clickhouse.com, "RowBinary"). Types covered: the integer and
 * float types, Bool, String, UUID, DateTime, DateTime64, Nullable(T) and
 * LowCardinality(T); a table with any other type has no encoder (rowBinaryEncoder
 * answers undefined) and stays on JSONEachRow.
 *
 * The format carries no types, so the column list must be the table's own (tableColumns
 * reads it from system.columns): RowBinaryWithNamesAndTypes, which checks them, is not
 * an input format of ClickHouse 18.16.
 */
import { Readable } from 'node:stream';
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { sqlIdentifier, sqlString } from './sql.js';

/** A column as system.columns names it. */
export interface Column {
  name: string;
  type: string;
}

/** A value that does not fit its column's type: the row can never be inserted as it is. */
export class RowEncodingError extends Error {
  constructor(column: string, type: string, value: unknown) {
    super(`column ${column} (${type}): cannot write ${describe(value)}`);
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `"${value.length > 40 ? `${value.slice(0, 40)}…` : value}"`;
  if (value === undefined) return 'a missing value';
  if (typeof value === 'object' && value !== null) return Array.isArray(value) ? 'a list' : 'an object';
  return JSON.stringify(value) ?? typeof value;
}

/** A growing output buffer. */
class Out {
  buf: Buffer;
  pos = 0;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }
  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }
  varint(n: number): void {
    while (n >= 0x80) {
      this.buf[this.pos++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }
  string(s: string): void {
    const len = s.length;
    // Short ASCII strings (most columns: ids, names, the empty enrichment columns): byte
    // by byte here, cheaper than a call into Buffer.write for each; a character past
    // 0x7f sends the string to the general case below, from its start.
    if (len < 24) {
      this.room(1 + len);
      const buf = this.buf;
      const at = this.pos + 1;
      let i = 0;
      for (; i < len; i++) {
        const c = s.charCodeAt(i);
        if (c > 0x7f) break;
        buf[at + i] = c;
      }
      if (i === len) {
        buf[this.pos] = len;
        this.pos = at + len;
        return;
      }
    }
    // Short strings: write the bytes after a one-byte length, then fill it in.
    if (len < 43) {
      this.room(1 + 3 * s.length);
      const n = this.buf.write(s, this.pos + 1, 'utf8');
      this.buf[this.pos] = n;
      this.pos += 1 + n;
      return;
    }
    const n = Buffer.byteLength(s, 'utf8');
    this.room(10 + n);
    this.varint(n);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }
}

type Put = (out: Out, value: unknown) => boolean;

const HEX = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Each ASCII code's value as a hex digit (-1: not one). */
const HEX_DIGIT = Array.from({ length: 128 }, (_, c) => {
  const d = parseInt(String.fromCharCode(c), 16);
  return Number.isNaN(d) ? -1 : d;
});
/** Where each byte of a UUID's text starts, in the order ClickHouse keeps them (bytes 7..0, then 15..8). */
const UUID_STARTS = [16, 14, 11, 9, 6, 4, 2, 0, 34, 32, 30, 28, 26, 24, 21, 19];

/** A UUID as two little-endian UInt64 (the high half first), as ClickHouse keeps it. */
function putUuid(out: Out, v: unknown): boolean {
  if (typeof v !== 'string' || !HEX.test(v)) return false;
  out.room(16);
  for (const start of UUID_STARTS) {
    out.buf[out.pos++] = (HEX_DIGIT[v.charCodeAt(start)]! << 4) | HEX_DIGIT[v.charCodeAt(start + 1)]!;
  }
  return true;
}

function unsigned(bytes: 1 | 2 | 4): Put {
  const max = 2 ** (8 * bytes);
  return (out, v) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= max) return false;
    out.room(bytes);
    out.pos = out.buf.writeUIntLE(v, out.pos, bytes);
    return true;
  };
}

function signed(bytes: 1 | 2 | 4): Put {
  const half = 2 ** (8 * bytes - 1);
  return (out, v) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < -half || v >= half) return false;
    out.room(bytes);
    out.pos = out.buf.writeIntLE(v, out.pos, bytes);
    return true;
  };
}

function bigint(isSigned: boolean): Put {
  const [min, max] = isSigned ? [-(2n ** 63n), 2n ** 63n - 1n] : [0n, 2n ** 64n - 1n];
  return (out, v) => {
    let b: bigint;
    if (typeof v === 'number' && Number.isSafeInteger(v)) b = BigInt(v);
    else if (typeof v === 'bigint') b = v;
    else if (typeof v === 'string' && /^-?\d{1,20}$/.test(v)) b = BigInt(v);
    else return false;
    if (b < min || b > max) return false;
    out.room(8);
    out.pos = isSigned ? out.buf.writeBigInt64LE(b, out.pos) : out.buf.writeBigUInt64LE(b, out.pos);
    return true;
  };
}

function float(bytes: 4 | 8): Put {
  return (out, v) => {
    if (typeof v !== 'number') return false;
    out.room(bytes);
    out.pos = bytes === 8 ? out.buf.writeDoubleLE(v, out.pos) : out.buf.writeFloatLE(v, out.pos);
    return true;
  };
}

/** DateTime: unix seconds as UInt32. Rows give whole seconds as a number. */
const putDateTime = unsigned(4);

/**
 * DateTime64(p): ticks of 10^-p s as Int64. Rows give unix seconds as a number, or as
 * text "seconds.fraction" (how rows carry milliseconds for JSONEachRow).
 */
function dateTime64(precision: number): Put {
  const perSecond = 10 ** precision;
  const i64 = bigint(true);
  return (out, v) => {
    let ticks: number;
    if (typeof v === 'number' && Number.isFinite(v)) ticks = Math.round(v * perSecond);
    else if (typeof v === 'string' && /^\d{1,12}(\.\d{1,9})?$/.test(v)) {
      const [s, f = ''] = v.split('.');
      ticks = Number(s) * perSecond + Number((f + '000000000').slice(0, precision) || '0');
    } else return false;
    return Number.isSafeInteger(ticks) && i64(out, ticks);
  };
}

const putString: Put = (out, v) => {
  if (typeof v !== 'string') return false;
  out.string(v);
  return true;
};

const putBool: Put = (out, v) => {
  if (typeof v !== 'boolean') return false;
  out.room(1);
  out.buf[out.pos++] = v ? 1 : 0;
  return true;
};

const SIMPLE: Record<string, Put> = {
  String: putString,
  UUID: putUuid,
  Bool: putBool,
  UInt8: unsigned(1),
  UInt16: unsigned(2),
  UInt32: unsigned(4),
  UInt64: bigint(false),
  Int8: signed(1),
  Int16: signed(2),
  Int32: signed(4),
  Int64: bigint(true),
  Float32: float(4),
  Float64: float(8),
};

/** The writer of one ClickHouse type, or undefined when this module does not write it. */
export function typeWriter(type: string): Put | undefined {
  const t = type.trim();
  if (SIMPLE[t]) return SIMPLE[t];
  if (/^DateTime(\('[^']*'\))?$/.test(t)) return putDateTime;
  const dt64 = /^DateTime64\((\d)(, *'[^']*')?\)$/.exec(t);
  if (dt64) return dateTime64(Number(dt64[1]));
  const inner = /^(Nullable|LowCardinality)\((.*)\)$/.exec(t);
  if (!inner) return undefined;
  const put = typeWriter(inner[2]!);
  if (!put || inner[1] === 'LowCardinality') return put; // LowCardinality(T) is written as T
  return (out, v) => {
    out.room(1);
    if (v === null || v === undefined) {
      out.buf[out.pos++] = 1;
      return true;
    }
    out.buf[out.pos++] = 0;
    return put(out, v);
  };
}

/** Encodes rows into one RowBinary body for `INSERT INTO t (columns) FORMAT RowBinary`. */
export type RowBinaryEncoder = (rows: readonly object[]) => Buffer;

/**
 * The encoder of rows with these columns (each row an object with a property per
 * column), or undefined when a column's type is not covered. A value that does not fit
 * its column throws RowEncodingError.
 */
export function rowBinaryEncoder(columns: readonly Column[]): RowBinaryEncoder | undefined {
  const puts: { name: string; type: string; put: Put }[] = [];
  for (const c of columns) {
    const put = typeWriter(c.type);
    if (!put) return undefined;
    puts.push({ ...c, put });
  }
  return (rows) => {
    const out = new Out(Math.max(256, rows.length * 256));
    for (const row of rows) {
      const r = row as Record<string, unknown>;
      for (const c of puts) {
        const v = r[c.name];
        if (!c.put(out, v)) throw new RowEncodingError(c.name, c.type, v);
      }
    }
    return out.buf.subarray(0, out.pos);
  };
}

/** How the consumer's rows travel to ClickHouse (INSERT_FORMAT). */
export type InsertFormat = 'RowBinary' | 'JSONEachRow';
export const INSERT_FORMATS: readonly InsertFormat[] = ['RowBinary', 'JSONEachRow'];

interface Encoding {
  columns: string;
  encode: RowBinaryEncoder;
}

/**
 * Inserts rows into tables in the chosen format. RowBinary writes the table's columns
 * that the rows carry, with the types system.columns gives (read on the first insert,
 * and again after an insert fails, in case a migration changed them); a table whose
 * types the encoder does not cover goes as JSONEachRow. A row that does not fit its
 * column's type throws RowEncodingError (classifyInsertError: rejected).
 */
export class ClickHouseInserter {
  private readonly encodings = new Map<string, Promise<Encoding | undefined>>();
  /** The format each table's last insert went in (JSONEachRow where RowBinary has no encoder). */
  readonly used = new Map<string, InsertFormat>();

  constructor(
    private readonly client: ClickHouseClient,
    readonly format: InsertFormat,
    /** Settings every insert carries (insert_distributed_sync through a Distributed table). */
    private readonly settings: ClickHouseSettings = {},
  ) {}

  async insert(table: string, rows: readonly object[]): Promise<void> {
    if (rows.length === 0) return;
    const key = `${table}:${Object.keys(rows[0]!).join(',')}`;
    try {
      const encoding = this.format === 'RowBinary' ? await this.encodingFor(key, table, rows[0]!) : undefined;
      this.used.set(table, encoding ? 'RowBinary' : 'JSONEachRow');
      if (!encoding) {
        await this.client.insert({
          table,
          values: [...rows],
          format: 'JSONEachRow',
          clickhouse_settings: this.settings,
        });
        return;
      }
      const result = await this.client.exec({
        query: `INSERT INTO ${table} (${encoding.columns}) FORMAT RowBinary`,
        values: Readable.from([encoding.encode(rows)]),
        clickhouse_settings: this.settings,
      });
      for await (const _ of result.stream) void _;
    } catch (err) {
      if (!(err instanceof RowEncodingError)) this.encodings.delete(key);
      throw err;
    }
  }

  /** The cached encoding of `table` for rows with the keys of `row` (read once per key). */
  private encodingFor(key: string, table: string, row: object): Promise<Encoding | undefined> {
    let pending = this.encodings.get(key);
    if (!pending) {
      pending = this.encodingOf(table, row);
      this.encodings.set(key, pending);
    }
    return pending;
  }

  /** The encoder of `table`'s columns that `row` has a property for. */
  private async encodingOf(table: string, row: object): Promise<Encoding | undefined> {
    const m = /^(?:`?(\w+)`?\.)?`?(\w+)`?$/.exec(table);
    if (!m) return undefined;
    const database = m[1] === undefined ? 'currentDatabase()' : sqlString(m[1]);
    const result = await this.client.query({
      query: `SELECT name, type FROM system.columns
        WHERE database = ${database} AND table = ${sqlString(m[2]!)}
          AND default_kind NOT IN ('MATERIALIZED', 'ALIAS')`,
      format: 'JSONEachRow',
    });
    const columns = (await result.json<Column>()).filter((c) => c.name in row);
    const encode = columns.length > 0 ? rowBinaryEncoder(columns) : undefined;
    return encode && { columns: columns.map((c) => sqlIdentifier(c.name)).join(', '), encode };
  }
}
