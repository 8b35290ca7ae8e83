/**
 * Generates the tables in docs/configuration.md and docs/errors.md from the code (the
 * config specs and ERROR_CODES), between <!-- generated:NAME --> markers, docs/openapi.json,
 * deploy/clickhouse/users.sh (the ClickHouse users and grants, SERVICE_USERS) and
 * deploy/postgres/roles.sql (the PostgreSQL roles and grants, PG_SERVICE_ROLES) and
 * docs/telemetry.schema.json (telemetry.yaml's JSON Schema, from the API's create bodies).
 * `npm run docs` rewrites them; test/unit/docs.test.ts fails when they are stale.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { runnerSpec } from '@telemetry/check-runner';
import { SCHEMA_FILE, schemaText } from '@telemetry/cli';
import { buildOpenApi, ERROR_CODES } from '@telemetry/contract';
import { gatewaySpec } from '@telemetry/ingest-gateway';
import { querySpec } from '@telemetry/query-service';
import { type ConfigSpec } from '@telemetry/platform';
import {
  PG_SERVICE_ROLE_NAMES,
  PG_SERVICE_ROLES,
  provisionSpec,
  toClusterSpec,
  type PgRoleGrant,
} from '@telemetry/store';
import { consumerSpec } from '@telemetry/stream-consumer';
import { ROLES_SQL_FILE, rolesSql } from '../deploy/roles-sql.js';
import { USERS_SCRIPT_FILE, usersScript } from '../deploy/users-sh.js';

const specs: [string, ConfigSpec][] = [
  ['ingest-gateway', gatewaySpec],
  ['stream-consumer', consumerSpec],
  ['query-service', querySpec],
  ['check-runner', runnerSpec],
  ['provision', provisionSpec],
  ['to-cluster', toClusterSpec],
];

const cell = (s: string): string => s.replace(/\|/g, '\\|');

export function configTable(): string {
  const vars = new Map<string, { def: string | undefined; doc: string; services: string[] }>();
  for (const [service, spec] of specs) {
    for (const s of Object.values(spec)) {
      const e = vars.get(s.name) ?? { def: s.default, doc: s.doc, services: [] };
      if (e.def !== s.default || e.doc !== s.doc) {
        // same name, different meaning per service: list separately
        vars.set(`${s.name} (${service})`, { def: s.default, doc: s.doc, services: [service] });
        continue;
      }
      e.services.push(service);
      vars.set(s.name, e);
    }
  }
  const rows = [...vars.entries()].sort(([a], [b]) => a.localeCompare(b));
  return [
    '| variable | default | services | meaning |',
    '|---|---|---|---|',
    ...rows.map(
      ([name, e]) =>
        `| \`${name.split(' ')[0]}\` | ${e.def === undefined ? '**required**' : e.def === '' ? '(empty)' : `\`${e.def}\``} | ${e.services.join(', ')} | ${cell(e.doc)} |`,
    ),
  ].join('\n');
}

export function errorTable(): string {
  return [
    '| code | HTTP status | meaning |',
    '|---|---|---|',
    ...Object.entries(ERROR_CODES).map(([code, e]) => `| \`${code}\` | ${e.status} | ${cell(e.description)} |`),
  ].join('\n');
}

/** The services' PostgreSQL roles and what each may do (PG_SERVICE_ROLES), for docs/operations.md. */
export function pgRolesTable(): string {
  return [
    '| role | used by | may |',
    '|---|---|---|',
    ...PG_SERVICE_ROLE_NAMES.map((service) => {
      const { usedBy, grants, functions } = PG_SERVICE_ROLES[service];
      const may = [
        ...(grants as readonly PgRoleGrant[]).map((g) => `${g.privileges.join(', ')} on \`${g.table}\``),
        ...(functions as readonly string[]).map((f) => `EXECUTE \`${f}\``),
      ];
      return `| \`<db>_${service}\` | ${cell(usedBy)} | ${may.join('; ')} |`;
    }),
  ].join('\n');
}

export function replaceGenerated(text: string, name: string, content: string): string {
  const re = new RegExp(`(<!-- generated:${name} -->)[\\s\\S]*?(<!-- /generated:${name} -->)`);
  if (!re.test(text)) throw new Error(`marker generated:${name} missing`);
  return text.replace(re, `$1\n${content}\n$2`);
}

export const GENERATED: [file: string, name: string, make: () => string][] = [
  ['docs/configuration.md', 'config', configTable],
  ['docs/errors.md', 'errors', errorTable],
  ['docs/operations.md', 'pg-roles', pgRolesTable],
];

export const OPENAPI_FILE = 'docs/openapi.json';
export const openapiText = (): string => `${JSON.stringify(buildOpenApi('all'), null, 2)}\n`;

if (process.argv[1]?.endsWith('generate.ts')) {
  for (const [file, name, make] of GENERATED) {
    writeFileSync(file, replaceGenerated(readFileSync(file, 'utf8'), name, make()));
  }
  writeFileSync(OPENAPI_FILE, openapiText());
  writeFileSync(SCHEMA_FILE, schemaText());
  writeFileSync(USERS_SCRIPT_FILE, usersScript());
  mkdirSync(dirname(ROLES_SQL_FILE), { recursive: true });
  writeFileSync(ROLES_SQL_FILE, rolesSql());
}
