import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { parseArgs } from 'node:util';
import { CONFIG_SECTIONS, type ConfigPlan, type ConfigSection } from '@telemetry/contract';
import { apiCall, ApiError, type ApiTarget } from './api.js';
import { exportYaml, type ExportedConfig } from './export.js';
import { ITEM_NAMES } from './file-schema.js';
import { compileFileSchema, resolveSecrets, sortProblems, validateFile, type Env } from './validate.js';
import { dotted, parseYaml, problemAt, type FileProblem, type YamlFile } from './yaml-file.js';

/**
 * The `telemetry` command (docs/as-code.md): validate, plan, apply, export. `run` is the
 * whole program but for the process (main.ts): arguments, environment and streams come
 * in, the exit code goes out.
 *
 * Exit codes: 0 done (plan: also with changes, unless --detailed-exitcode); 1 an error (the
 * file is invalid, the API refused or could not be reached, bad arguments); 2 plan
 * --detailed-exitcode: there are changes.
 */

export interface Io {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  env: Env;
  /** Asks a question on the terminal; undefined when there is none (stdin is not a TTY). */
  ask?: (question: string) => Promise<string>;
}

export const EXIT = { ok: 0, error: 1, changes: 2 } as const;

const USAGE = `Usage: telemetry <command> [options]

Commands:
  validate   check telemetry.yaml offline (schema, keys, references, environment variables)
  plan       show what apply would create, change and delete
  apply      make the tenant match the file (one transaction: all or nothing)
  export     write the tenant's managed objects as telemetry.yaml

Options:
  -f, --file <path>         the file (default telemetry.yaml)
  --url <url>               the installation (default $TELEMETRY_URL)
  --api-key-file <path>     a file holding the API key (default $TELEMETRY_API_KEY)
  --prune                   plan, apply: delete managed objects the file no longer has
  --detailed-exitcode       plan: exit 2 when there are changes, 0 when none
  --auto-approve            apply: do not ask for confirmation
  -o, --output <path>       export: write the file there (default: standard output)
  --adopt                   export: first give every object without a key a key
  --json                    one JSON object on standard output
  -h, --help                this help

Exit codes: 0 done, 1 error, 2 changes (plan --detailed-exitcode). See docs/as-code.md.
`;

const OPTIONS = {
  file: { type: 'string', short: 'f', default: 'telemetry.yaml' },
  url: { type: 'string' },
  'api-key-file': { type: 'string' },
  prune: { type: 'boolean', default: false },
  'detailed-exitcode': { type: 'boolean', default: false },
  'auto-approve': { type: 'boolean', default: false },
  output: { type: 'string', short: 'o' },
  adopt: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

type Options = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** What a command allows beyond --json and --help. */
const COMMAND_OPTIONS: Record<string, (keyof typeof OPTIONS)[]> = {
  validate: ['file'],
  plan: ['file', 'url', 'api-key-file', 'prune', 'detailed-exitcode'],
  apply: ['file', 'url', 'api-key-file', 'prune', 'auto-approve'],
  export: ['url', 'api-key-file', 'output', 'adopt'],
};

/** A failure of the command: what --json reports as `error`. */
class Failure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly problems: FileProblem[] = [],
  ) {
    super(message);
  }
}

export async function run(argv: string[], io: Io): Promise<number> {
  let values: Options;
  let positionals: string[];
  let given: string[];
  try {
    const parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true, tokens: true });
    ({ values, positionals } = parsed);
    given = parsed.tokens.flatMap((t) => (t.kind === 'option' ? [t.name] : []));
  } catch (e) {
    return usageError(io, argv.includes('--json'), (e as Error).message);
  }
  const command = positionals[0];
  if (command === undefined && !values.help) return usageError(io, values.json, 'which command?');
  if (values.help || command === undefined || command === 'help') {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  const allowed = COMMAND_OPTIONS[command];
  if (!allowed) return usageError(io, values.json, `unknown command "${command}"`);
  if (positionals.length > 1) return usageError(io, values.json, `unexpected argument "${positionals[1]}"`);
  for (const g of given) {
    if (g !== 'json' && g !== 'help' && !(allowed as string[]).includes(g)) {
      return usageError(io, values.json, `--${g} is not an option of ${command}`);
    }
  }
  const out = new Output(io, command, values.json);
  try {
    switch (command) {
      case 'validate':
        return validateCommand(values, io, out);
      case 'plan':
      case 'apply':
        return await planCommand(command, values, io, out);
      default:
        return await exportCommand(values, io, out);
    }
  } catch (e) {
    if (e instanceof Failure) return out.fail(e.code, e.message, e.problems);
    if (e instanceof ApiError) {
      return out.fail(e.code, e.code === 'UNREACHABLE' ? e.message : `${e.code}: ${e.message}`);
    }
    return out.fail('ERROR', (e as Error).message);
  }
}

function usageError(io: Io, json: boolean | undefined, message: string): number {
  if (json) io.stdout(`${JSON.stringify({ ok: false, error: { code: 'USAGE', message }, problems: [] })}\n`);
  else io.stderr(`telemetry: ${message} (telemetry --help lists the commands and their options)\n`);
  return EXIT.error;
}

/** Writes what a command found: lines for people, or (--json) one object on stdout at the end. */
class Output {
  constructor(
    private readonly io: Io,
    private readonly command: string,
    readonly json: boolean,
  ) {}

  line(s: string): void {
    if (!this.json) this.io.stdout(`${s}\n`);
  }

  /** The command's result: --json prints it whole; otherwise the lines were printed as it went. */
  result(code: number, fields: Record<string, unknown>): number {
    if (this.json) this.io.stdout(`${JSON.stringify({ ok: true, command: this.command, ...fields, problems: [] })}\n`);
    return code;
  }

  fail(code: string, message: string, problems: FileProblem[] = []): number {
    if (this.json) {
      this.io.stdout(
        `${JSON.stringify({ ok: false, command: this.command, error: { code, message }, problems: problems.map(jsonProblem) })}\n`,
      );
    } else {
      for (const p of problems) this.io.stderr(`${formatProblem(p)}\n`);
      this.io.stderr(`telemetry ${this.command}: ${message}\n`);
    }
    return EXIT.error;
  }
}

/** `telemetry.yaml:12:5: monitors[2].interval_seconds: must be >= 30` */
export function formatProblem(p: FileProblem): string {
  const where = dotted(p.path);
  return `${p.file}:${p.line}:${p.column}: ${where ? `${where}: ` : ''}${p.message}`;
}

const jsonProblem = (p: FileProblem) => ({ ...p, text: formatProblem(p) });

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Reads, parses and validates the file: the parsed file, or a Failure with every problem. */
function load(file: string, io: Io): YamlFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Failure(
      'FILE_UNREADABLE',
      `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  const { parsed, problems } = parseYaml(file, text);
  if (!parsed) throw new Failure('INVALID_FILE', `${file}: ${plural(problems.length, 'problem')}`, problems);
  const found = validateFile(parsed, io.env, compileFileSchema());
  if (found.length > 0) throw new Failure('INVALID_FILE', `${file}: ${plural(found.length, 'problem')}`, found);
  return parsed;
}

function counts(y: YamlFile): string {
  const data = y.data as Partial<Record<ConfigSection, unknown[]>>;
  const present = CONFIG_SECTIONS.filter((s) => Array.isArray(data[s]));
  return present.length === 0
    ? 'no sections'
    : present.map((s) => plural(data[s]!.length, ITEM_NAMES[s], s.replace(/_/g, ' '))).join(', ');
}

function validateCommand(values: Options, io: Io, out: Output): number {
  const y = load(values.file, io);
  out.line(`${values.file}: valid (${counts(y)})`);
  return out.result(EXIT.ok, { file: values.file });
}

function target(values: Options, io: Io): ApiTarget {
  const url = (values.url ?? io.env.TELEMETRY_URL ?? '').replace(/\/+$/, '');
  if (!url) throw new Failure('USAGE', 'no installation: set TELEMETRY_URL or pass --url');
  if (!/^https?:\/\/[^\s]+$/.test(url)) throw new Failure('USAGE', `the URL must be http(s)://…, not "${url}"`);
  let key: string | undefined;
  if (values['api-key-file'] !== undefined) {
    try {
      key = readFileSync(values['api-key-file'], 'utf8').trim();
    } catch (e) {
      throw new Failure(
        'USAGE',
        `cannot read the API key file ${values['api-key-file']}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
  } else key = io.env.TELEMETRY_API_KEY?.trim();
  if (!key) throw new Failure('USAGE', 'no API key: set TELEMETRY_API_KEY or pass --api-key-file');
  return { url, key };
}

const SIGNS = { create: '+', update: '~', delete: '-' } as const;

function printChanges(out: Output, plan: ConfigPlan): void {
  for (const c of plan.changes) {
    const kind = c.kind.replace(/_/g, ' ');
    out.line(`${SIGNS[c.action]} ${kind} ${c.key}${c.action === 'update' ? ` (${c.fields.join(', ')})` : ''}`);
  }
}

function summary(plan: ConfigPlan): string {
  const s = plan.summary;
  return plan.applied
    ? `Applied: ${s.create} created, ${s.update} changed, ${s.delete} deleted, ${s.unchanged} unchanged.`
    : `Plan: ${s.create} to create, ${s.update} to change, ${s.delete} to delete, ${s.unchanged} unchanged.`;
}

/** The server's problems (pointers into the document sent) at the file's lines and columns. */
function serverProblems(y: YamlFile, e: ApiError): FileProblem[] {
  return sortProblems(e.problems.map((p) => problemAt(y, p.path, p.message)));
}

const noChanges = (plan: ConfigPlan): string =>
  `No changes: ${plural(plan.summary.unchanged, 'object')} as the file describes.`;

async function post(y: YamlFile, t: ApiTarget, io: Io, dryRun: boolean, prune: boolean): Promise<ConfigPlan> {
  const document = resolveSecrets(y.data, io.env);
  try {
    return await apiCall<ConfigPlan>(t, 'POST', `/api/config?dry_run=${dryRun}&prune=${prune}`, document);
  } catch (e) {
    if (e instanceof ApiError && e.problems.length > 0) {
      const problems = serverProblems(y, e);
      throw new Failure(
        e.code,
        `${e.code}: ${e.message} (${plural(problems.length, 'problem')}; nothing was changed)`,
        problems,
      );
    }
    throw e;
  }
}

async function planCommand(command: 'plan' | 'apply', values: Options, io: Io, out: Output): Promise<number> {
  const y = load(values.file, io);
  const t = target(values, io);
  const prune = values.prune;
  if (command === 'plan' || !values['auto-approve']) {
    const plan = await post(y, t, io, true, prune);
    printChanges(out, plan);
    const changed = plan.changes.length > 0;
    if (command === 'plan' || !changed) {
      out.line(changed ? `\n${summary(plan)}` : noChanges(plan));
      return out.result(changed && values['detailed-exitcode'] ? EXIT.changes : EXIT.ok, { changed, plan });
    }
    out.line(`\n${summary(plan)}`);
    if (!io.ask || out.json) {
      throw new Failure(
        'NOT_APPROVED',
        'apply asks for confirmation on a terminal: pass --auto-approve to apply without one',
      );
    }
    const answer = await io.ask('Apply these changes? Only "yes" applies them: ');
    if (answer.trim() !== 'yes') throw new Failure('NOT_APPROVED', 'not applied: the answer was not "yes"');
  }
  const applied = await post(y, t, io, false, prune);
  if (values['auto-approve']) printChanges(out, applied);
  out.line(applied.changes.length > 0 ? summary(applied) : noChanges(applied));
  return out.result(EXIT.ok, { changed: applied.changes.length > 0, plan: applied });
}

async function exportCommand(values: Options, io: Io, out: Output): Promise<number> {
  const t = target(values, io);
  let adopted: unknown[] | undefined;
  if (values.adopt) {
    adopted = (await apiCall<{ adopted: unknown[] }>(t, 'POST', '/api/config/adopt')).adopted;
  }
  const exported = await apiCall<ExportedConfig>(t, 'GET', '/api/config');
  const { text, secrets } = exportYaml(exported);
  if (values.output !== undefined) {
    writeFileSync(values.output, text);
    if (!out.json) {
      if (adopted) io.stderr(`Adopted ${plural(adopted.length, 'object')} (keys derived from their names).\n`);
      io.stderr(
        `Wrote ${values.output}${secrets.length > 0 ? ` (${plural(secrets.length, 'secret')} as environment variables)` : ''}.\n`,
      );
    }
  } else out.line(text.replace(/\n$/, ''));
  return out.result(EXIT.ok, {
    file: values.output ?? null,
    ...(adopted ? { adopted } : {}),
    env: secrets.map((s) => s.env),
    unmanaged: exported.unmanaged,
    ...(values.output === undefined ? { yaml: text } : {}),
  });
}

/** The terminal's question, for main.ts (undefined when stdin is not a terminal). */
export function terminalAsk(): Io['ask'] {
  if (!process.stdin.isTTY) return undefined;
  return async (question) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return await rl.question(question);
    } finally {
      rl.close();
    }
  };
}
