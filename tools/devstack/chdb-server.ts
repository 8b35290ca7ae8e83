/**
 * A current ClickHouse engine (chDB, in-process) behind the part of ClickHouse's HTTP
 * interface our clients use, so the services' own code and SQL run on it unchanged:
 *
 *   POST /?database=D[&query=INSERT ... FORMAT F]  body: SQL, or the insert's rows
 *                                                   (RowBinary ones go through a file)
 *   GET  /ping                                      -> "Ok."
 *
 * A failed statement answers 500 with ClickHouse's own "Code: N. DB::Exception: ..."
 * text and the X-ClickHouse-Exception-Code header, as the server does. Statements run
 * one at a time (chDB's session is single-threaded). Settings sent as URL parameters
 * (limits such as max_execution_time) are not applied: this engine is for checking
 * SQL and answers, not limits. Users and passwords are not checked.
 *
 * Run as its own process (startChdbServer in chdb.ts): CHDB_MODULE_DIR names the cached
 * chDB install, CHDB_DATA the session's directory; it prints `listening <port>`.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { rmSync, writeFileSync } from 'node:fs';

interface ChdbSession {
  query(sql: string, format?: string): string;
  close(): void;
}

const moduleDir = process.env.CHDB_MODULE_DIR;
const dataDir = process.env.CHDB_DATA;
if (!moduleDir || !dataDir) throw new Error('CHDB_MODULE_DIR and CHDB_DATA must be set');
const require = createRequire(join(moduleDir, 'package.json'));
const { Session } = require('chdb') as { Session: new (path: string) => ChdbSession };
const session = new Session(dataDir);

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks);
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
}

const BINARY_INSERT = /\bFORMAT\s+RowBinary\s*$/i;
let bodies = 0;

/**
 * The statement to run: the query parameter with the body after it, or, for a binary
 * format (which a text query cannot carry), the query reading the body from a file.
 */
function statement(prefix: string | null, data: Buffer): { sql: string; file?: string } {
  if (prefix === null) return { sql: data.toString('utf8') };
  if (!BINARY_INSERT.test(prefix)) return { sql: `${prefix}\n${data.toString('utf8')}` };
  const file = join(dataDir!, `insert-${bodies++}.bin`);
  writeFileSync(file, data);
  return { sql: prefix.replace(BINARY_INSERT, `FROM INFILE '${file}' FORMAT RowBinary`), file };
}

/** ClickHouse's "Code: N. DB::Exception: ..." out of chDB's error text. */
function clickhouseError(err: unknown): { code: string; text: string } {
  const message = err instanceof Error ? err.message : String(err);
  const text = message.replace(/^Query failed: /, '');
  return { code: /Code: (\d+)\./.exec(text)?.[1] ?? '1000', text };
}

const server = createServer((req, res) => {
  void (async () => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/ping') {
      res.end('Ok.\n');
      return;
    }
    const { sql, file } = statement(url.searchParams.get('query'), await body(req));
    const database = url.searchParams.get('database');
    try {
      if (database) session.query(`USE \`${database.replace(/`/g, '')}\``);
      const out = session.query(sql, url.searchParams.get('default_format') ?? 'TabSeparated');
      res.writeHead(200, {
        'Content-Type': 'text/plain; charset=UTF-8',
        'X-ClickHouse-Query-Id': url.searchParams.get('query_id') ?? '',
        'X-ClickHouse-Summary': '{"read_rows":"0","read_bytes":"0","written_rows":"0","written_bytes":"0"}',
      });
      res.end(out);
    } catch (err) {
      const e = clickhouseError(err);
      res.writeHead(500, { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Exception-Code': e.code });
      res.end(`${e.text}\n`);
    } finally {
      if (file) rmSync(file, { force: true });
    }
  })().catch((err: unknown) => {
    res.writeHead(500);
    res.end(String(err));
  });
});

server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(`listening ${typeof addr === 'object' && addr ? addr.port : 0}\n`);
});

function stop(): void {
  server.close();
  session.close();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
