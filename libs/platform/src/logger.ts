import { Writable } from 'node:stream';
import winston from 'winston';

export type Logger = winston.Logger;

// Our key format (see keys.ts) and any `key=` query parameter. Applied to every log
// line as a last line of defence: code should never log a key in the first place.
const KEY_TOKEN = /\b(tk|ak)_[0-9a-f]{16}_[0-9A-Za-z]+/g;
const KEY_PARAM = /([?&](?:key|access_key|api_key)=)[^&\s"]*/gi;

export function redactSecrets(s: string): string {
  return s.replace(KEY_TOKEN, '$1_[REDACTED]').replace(KEY_PARAM, '$1[REDACTED]');
}

function redactDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (depth > 4 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = redactDeep(v, depth + 1);
  return out;
}

const redact = winston.format((info) => {
  for (const k of Object.keys(info)) {
    (info as Record<string, unknown>)[k] = redactDeep((info as Record<string, unknown>)[k]);
  }
  return info;
});

export interface LoggerOptions {
  service: string;
  level: string;
  /** Where JSON lines go; stdout by default. Tests pass a stream to read them. */
  stream?: Writable;
}

/** JSON logs, one object a line, with `service`, `level`, `message`, `timestamp`. */
export function createLogger(opts: LoggerOptions): Logger {
  const transport = opts.stream
    ? new winston.transports.Stream({ stream: opts.stream })
    : new winston.transports.Console();
  return winston.createLogger({
    level: opts.level === 'silent' ? 'error' : opts.level,
    silent: opts.level === 'silent',
    defaultMeta: { service: opts.service },
    format: winston.format.combine(winston.format.timestamp(), redact(), winston.format.json()),
    transports: [transport],
  });
}

/** A stream that keeps every line written to it, for tests that read logs. */
export class LineCollector extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    for (const l of chunk.toString().split('\n')) if (l) this.lines.push(l);
    cb();
  }
}
