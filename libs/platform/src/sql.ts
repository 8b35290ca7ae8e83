/**
 * The one way a value enters SQL. ClickHouse 18.16 has no server-side query
 * parameters, so values are inlined as literals: validate first, then escape here.
 * Tested in test/unit/sql.test.ts (quotes, backslashes, NUL, comments, non-ASCII).
 */

/** A ClickHouse string literal, quoted. Escapes backslash, quote and every control character. */
export function sqlString(value: string): string {
  if (typeof value !== 'string') throw new TypeError('sqlString expects a string');
  let out = "'";
  for (const ch of value) {
    const c = ch.codePointAt(0) ?? 0;
    if (ch === '\\') out += '\\\\';
    else if (ch === "'") out += "\\'";
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + "'";
}

/** A finite number as a literal; anything else throws. */
export function sqlNumber(value: number): string {
  if (!Number.isFinite(value)) throw new TypeError('sqlNumber expects a finite number');
  return String(value);
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** A database or table name from config; only plain identifiers are accepted. */
export function sqlIdentifier(name: string): string {
  if (!IDENT.test(name)) throw new TypeError(`not a plain identifier: ${JSON.stringify(name)}`);
  return `\`${name}\``;
}

/** A list of strings, e.g. for IN (...). */
export function sqlStringList(values: readonly string[]): string {
  if (values.length === 0) throw new TypeError('sqlStringList expects at least one value');
  return `(${values.map(sqlString).join(', ')})`;
}

/**
 * A table's name typed with the rows it holds: a string at run time, and at compile time
 * a BatchWriter takes only rows of its type for it (libs/store's streamTables maps each
 * table the stream consumer writes to its row type).
 */
export type Table<Row extends object> = string & { readonly __rows?: Row };

/** `name` (already quoted or qualified as the caller needs it) as the table of `Row`s. */
export function table<Row extends object>(name: string): Table<Row> {
  return name;
}
