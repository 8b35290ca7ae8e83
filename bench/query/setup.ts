/**
 * The set-up of `npm run bench:query`: the stack and a fresh database (the hot tail's own
 * empty topic), the checks loaded server-side, an API key (checks:read), the query service
 * started compiled in its own process, and the two ways in: the service with its key, and
 * ClickHouse direct with the service's read-only user and per-query settings.
 */
import { DEFAULT_TENANT } from '@telemetry/contract';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadQueryConfig } from '@telemetry/query-service';
import { createLogger, createPostgres } from '@telemetry/platform';
import { issueKey } from '@telemetry/store';
import { provision } from '../../tools/devstack/provision.js';
import { storeEnv } from '../../tools/devstack/users.js';
import { HttpClient } from '../../harness/load.js';
import { freePort, serviceCommand } from '../../harness/processes.js';
import { serviceEnv, type Cleanups } from '../../harness/run.js';
import { adminClickHouse, startChild } from '../common/stack.js';
import { DataSpec, loadChecks } from './data.js';
import { bench, cfg, log, SERVICE_MAX_RESULT_ROWS } from './options.js';
import type { DirectTarget, ServiceTarget } from './requests.js';

export async function setUp(cleanups: Cleanups) {
  const { stack, pids, machine } = await bench.stack(cleanups);
  const database = `bench_${randomBytes(4).toString('hex')}`;
  // The hot tail's own topic and consumer group: empty, so the tail starts at offset 0
  // and its monitors load from ClickHouse (where this benchmark puts every check).
  const checksTopic = `bench.checks.${database}`;
  const users = await provision(stack, {
    database,
    topics: [checksTopic],
    partitions: 1,
    logger: createLogger({ service: 'bench', level: 'warn' }),
  });
  const admin = adminClickHouse(cleanups, stack, database, 3_600_000);
  const registry = createPostgres(
    { databaseUrl: users.postgres!.owner, databasePoolMax: 2, databaseTimeoutMs: 60_000 },
    createLogger({ service: 'bench', level: 'warn' }),
    'bench',
  );
  cleanups.push(async () => {
    if (stack.mode === 'external') await admin.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    await registry.end();
  });

  const spec = new DataSpec(cfg.checks, cfg.monitors, Math.floor(Date.now() / 3_600_000) * 3600);
  log(`loading ${cfg.checks.toLocaleString('en-US')} checks into ${database}.checks (server-side)...`);
  const load = await loadChecks(admin, registry, database, spec, log);
  log(
    `loaded in ${load.insertSeconds} s (${load.rowsPerSecond.toLocaleString('en-US')} rows/s); OPTIMIZE FINAL ${load.optimizeSeconds} s`,
  );

  const { key } = await issueKey(registry, {
    tenantId: DEFAULT_TENANT,
    kind: 'api',
    name: 'bench:query',
    scopes: ['checks:read'],
  });
  const port = await freePort();
  const env = serviceEnv(stack, database, port, {
    ...storeEnv(users, 'query-service'),
    CHECKS_TOPIC: checksTopic,
    CONSUMER_GROUP_ID: `${database}-writer`,
  });
  const queryConfig = loadQueryConfig(env);
  const profileDir = cfg.profile || cfg.traceGc ? mkdtempSync(join(tmpdir(), 'bench-query-profile-')) : undefined;
  const gcLog = cfg.traceGc && profileDir ? join(profileDir, 'service-gc.log') : undefined;
  const service = await startChild(
    cleanups,
    {
      name: 'query-service',
      command: serviceCommand('query-service', true),
      nodeArgs: [
        ...(cfg.profile && profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
        ...(gcLog ? ['--trace-gc'] : []),
        ...cfg.serviceNodeArgs,
      ],
      ...(gcLog ? { logFile: gcLog } : {}),
      env,
      url: `http://127.0.0.1:${port}`,
    },
    { readyMs: 60_000, closeMs: 15_000 },
  );
  log(
    `query service ready at ${service.url} (pid ${service.pid}, ${new Date().toISOString()})${gcLog ? `; its --trace-gc output: ${gcLog}` : ''}`,
  );

  const serviceHttp = new HttpClient(service.url);
  const directHttp = new HttpClient(stack.clickhouseUrl);
  cleanups.push(() => Promise.resolve([serviceHttp, directHttp].forEach((c) => c.close())));
  const serviceTarget: ServiceTarget = { http: serviceHttp, apiKey: key };
  const directTarget: DirectTarget = {
    http: directHttp,
    user: users.query.user,
    password: users.query.password,
    database,
    settings: {
      max_execution_time: Math.ceil(queryConfig.queryTimeoutMs / 1000),
      max_result_rows: SERVICE_MAX_RESULT_ROWS,
    },
  };
  return {
    stack,
    pids,
    machine,
    database,
    admin,
    spec,
    load,
    queryConfig,
    service,
    serviceTarget,
    directTarget,
    profileDir,
  };
}
