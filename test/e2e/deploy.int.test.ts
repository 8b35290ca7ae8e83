import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { loadRunnerConfig } from '@telemetry/check-runner';
import { PG_SERVICE_ROLE_NAMES, pgRoleName, type PgServiceRole } from '@telemetry/store';
import { loadGatewayConfig } from '@telemetry/ingest-gateway';
import { ConfigError, newSealingKeyText, type Env } from '@telemetry/platform';
import { loadQueryConfig } from '@telemetry/query-service';
import { loadConsumerConfig } from '@telemetry/stream-consumer';

const run = promisify(execFile);

/** The secrets docker-compose.yml requires (.env.example documents them): our own, here. */
const COMPOSE_SECRETS = { HEARTBEAT_KEY: randomBytes(32).toString('hex'), SECRETS_KEYS: newSealingKeyText('k1') };

/** docker-compose with the project's file; `env` replaces the required secrets. */
function compose(args: string[], env: Record<string, string | undefined> = COMPOSE_SECRETS) {
  return run('docker-compose', ['-f', 'docker-compose.yml', ...args], {
    env: { ...process.env, HEARTBEAT_KEY: undefined, SECRETS_KEYS: undefined, ...env },
    maxBuffer: 16 * 1024 * 1024,
  });
}

interface ComposeService {
  image?: string;
  command?: string[];
  build?: { args?: Record<string, string> };
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  ports?: (string | { host_ip?: string })[];
  volumes?: (string | { target: string })[];
}

/** Every metric name our code registers, read from the sources (plus Node defaults and `up`). */
function definedMetrics(): Set<string> {
  const names = new Set(['up', 'process_resident_memory_bytes']);
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory() && e.name !== 'node_modules' && e.name !== 'dist') walk(p);
      else if (e.name.endsWith('.ts')) {
        const text = readFileSync(p, 'utf8');
        for (const [, n] of text.matchAll(/name: '([a-z_]+)',\s*\n?\s*help:/g)) names.add(n!);
        // The platform's counter()/histogram() helpers: (registry, 'name', 'help', …).
        for (const [, n] of text.matchAll(/\b(?:counter|histogram)\(\s*[\w.]+,\s*'([a-z_]+)',/g)) names.add(n!);
        // A file's own gauge('name', 'help', read) helper (change-feed.ts).
        for (const [, n] of text.matchAll(/\bgauge\(\s*'([a-z_]+)',/g)) names.add(n!);
      }
    }
  };
  walk('libs');
  walk('services');
  return names;
}

function metricsIn(expr: string): string[] {
  const ignore = new Set([
    'sum',
    'rate',
    'by',
    'le',
    'histogram_quantile',
    'increase',
    'clamp_min',
    'deriv',
    'absent',
    'and',
    'route',
    'service',
    'status',
    'code',
    'table',
    'topic',
    'reason',
    'job',
  ]);
  return [...expr.replace(/"[^"]*"/g, '').matchAll(/[a-z_]+(?=[{[(\s]|$)/g)]
    .map((m) => m[0].replace(/_(bucket|sum|count)$/, ''))
    .filter((n) => n.includes('_') && !ignore.has(n));
}

/** The deployment material, checked by real tools (tools/validators/install.sh installs them). */
describe('deploy material (real validators)', function () {
  this.timeout(600_000);
  let bin = '';

  before(async () => {
    bin = (await run('bash', ['tools/validators/install.sh'], { maxBuffer: 16 * 1024 * 1024 })).stdout.trim();
  });

  it('docker-compose.yml is valid for docker-compose', async () => {
    await compose(['config', '-q']);
    const { stdout } = await compose(['config', '--services']);
    expect(stdout.split('\n').filter(Boolean).sort()).to.deep.equal([
      'check-runner',
      'clickhouse',
      'ingest-gateway',
      'kafka',
      'postgres',
      'postgres-roles',
      'provision',
      'query-service',
      'stream-consumer',
    ]);
  });

  it('docker-compose: PostgreSQL 15 with a volume; provision migrates as the owner, roles.sql runs next, each service has its own role', async () => {
    const { stdout } = await compose(['config']);
    const { parse } = await import('yaml');
    const { services } = parse(stdout) as { services: Record<string, ComposeService> };
    const postgres = services.postgres!;
    expect(postgres.image).to.equal('postgres:15');
    expect(postgres.healthcheck!.test.join(' ')).to.contain('pg_isready');
    const target = (v: string | { target: string }) => (typeof v === 'string' ? v.split(':')[1] : v.target);
    expect(postgres.volumes!.map(target)).to.deep.equal(['/var/lib/postgresql/data']);
    expect(postgres.ports ?? [], 'PostgreSQL is not published').to.deep.equal([]);
    const owner = postgres.environment!.POSTGRES_USER!;
    const db = postgres.environment!.POSTGRES_DB!;
    const url = (service: string): URL => new URL(services[service]!.environment!.DATABASE_URL!);

    // The provisioning step migrates as the owner, once PostgreSQL answers.
    expect(services.provision!.depends_on!.postgres!.condition).to.equal('service_healthy');
    expect(url('provision').username).to.equal(owner);
    expect(decodeURIComponent(url('provision').password)).to.equal(postgres.environment!.POSTGRES_PASSWORD);
    expect(url('provision').pathname).to.equal(`/${db}`);

    // Then roles.sql, with psql, as the owner, with a password per role.
    const roles = services['postgres-roles']!;
    expect(roles.depends_on!.provision!.condition).to.equal('service_completed_successfully');
    expect(roles.volumes!.map(target)).to.include('/roles.sql');
    const command = roles.command!.join(' ');
    expect(command).to.contain('psql').and.contain('-f /roles.sql').and.contain(`-v db=${db}`);
    expect(roles.environment!.PGUSER).to.equal(owner);
    expect(roles.environment!.PGHOST).to.equal('postgres');

    // Each service connects as its own role, with the password roles.sql set for it.
    const ownRoles: Record<string, PgServiceRole> = {
      'ingest-gateway': 'ingest',
      'query-service': 'query',
      'check-runner': 'runner',
      'stream-consumer': 'consumer',
    };
    expect(Object.values(ownRoles).sort()).to.deep.equal([...PG_SERVICE_ROLE_NAMES].sort());
    for (const [name, role] of Object.entries(ownRoles)) {
      const u = url(name);
      expect(decodeURIComponent(u.username), name).to.equal(pgRoleName(db, role));
      expect(decodeURIComponent(u.password), name).to.equal(roles.environment![`${role}_password`]);
      expect(command, name).to.contain(`-v ${role}_password="$$${role}_password"`);
      expect(`${u.hostname}:${u.port}${u.pathname}`, name).to.equal(`postgres:5432/${db}`);
      expect(services[name]!.depends_on!['postgres-roles']!.condition, name).to.equal('service_completed_successfully');
    }
  });

  it('docker-compose runs the check runner and gives the query service Kafka and a registry user', async () => {
    const { stdout } = await compose(['config']);
    const { parse } = await import('yaml');
    const { services } = parse(stdout) as { services: Record<string, ComposeService> };
    const runner = services['check-runner']!;
    expect(runner.build?.args?.SERVICE).to.equal('check-runner');
    expect(runner.environment?.PORT).to.equal('8083');
    expect(runner.environment?.KAFKA_BROKERS).to.be.a('string');
    expect(runner.depends_on?.['postgres-roles']?.condition).to.equal('service_completed_successfully');
    expect(runner.healthcheck?.test.join(' ')).to.contain('http://127.0.0.1:8083/readyz');
    const query = services['query-service']!.environment!;
    expect(query).to.include.all.keys('KAFKA_BROKERS', 'REGISTRY_CLICKHOUSE_USER', 'REGISTRY_CLICKHOUSE_PASSWORD');
    expect(query.REGISTRY_CLICKHOUSE_USER).to.equal('registry');
    const dockerfile = readFileSync('Dockerfile', 'utf8');
    for (const service of ['ingest-gateway', 'stream-consumer', 'query-service', 'check-runner']) {
      expect(dockerfile, service).to.contain(
        `COPY --from=build /app/services/${service}/dist services/${service}/dist`,
      );
    }
    // The gateway serves the browser SDK from the image (docs/sdk.md).
    expect(dockerfile).to.contain('COPY --from=build /app/sdk/browser/dist/v1.js sdk/browser/dist/');
  });

  it('docker-compose: no service runs as the ClickHouse admin, each has its own user, ClickHouse is on loopback only', async () => {
    const { stdout } = await compose(['config']);
    const { parse } = await import('yaml');
    const { services } = parse(stdout) as { services: Record<string, ComposeService> };
    const clickhouse = services.clickhouse!;
    const admin = clickhouse.environment!.CLICKHOUSE_USER;
    expect(services.provision!.environment!.CLICKHOUSE_USER).to.equal(admin);
    const script = readFileSync('deploy/clickhouse/users.sh', 'utf8');
    const users = new Map<string, string>();
    for (const name of ['ingest-gateway', 'stream-consumer', 'query-service', 'check-runner']) {
      const env = services[name]!.environment!;
      for (const [u, p] of [
        [env.CLICKHOUSE_USER, env.CLICKHOUSE_PASSWORD],
        ...(name === 'query-service' ? [[env.REGISTRY_CLICKHOUSE_USER, env.REGISTRY_CLICKHOUSE_PASSWORD]] : []),
      ] as [string | undefined, string | undefined][]) {
        expect(u, `${name} has a ClickHouse user`).to.be.a('string').and.not.equal(admin).and.not.equal('default');
        expect(users.has(u!), `${u} is used by one service only`).to.equal(false);
        users.set(u!, name);
        // The user exists (users.sh) with the password the service is given.
        expect(script, u).to.match(new RegExp(`CREATE USER OR REPLACE ${u}(\\$\\{on_cluster\\})? IDENTIFIED`));
        const passwordVar = `${u!.toUpperCase()}_PASSWORD`;
        expect(clickhouse.environment![passwordVar], passwordVar).to.equal(p);
      }
    }
    expect([...users.keys()].sort()).to.deep.equal(['consumer', 'ingest', 'query', 'registry', 'runner']);
    // docker-compose 1.x prints short syntax ('127.0.0.1:8123:8123/tcp'), 2.x objects.
    const hostIp = (p: string | { host_ip?: string }) => (typeof p === 'string' ? p.split(':')[0] : p.host_ip);
    expect(clickhouse.ports!.map(hostIp)).to.deep.equal(['127.0.0.1']);
    const target = (v: string | { target: string }) => (typeof v === 'string' ? v.split(':')[1] : v.target);
    expect(clickhouse.volumes!.map(target)).to.include('/docker-entrypoint-initdb.d/users.sh');
  });

  it('docker-compose: the secrets come from .env (no default), and every published port is on loopback', async () => {
    for (const missing of ['HEARTBEAT_KEY', 'SECRETS_KEYS'] as const) {
      const err = await compose(['config', '-q'], { ...COMPOSE_SECRETS, [missing]: undefined }).then(
        () => undefined,
        (e: unknown) => e as Error & { stderr: string },
      );
      expect(err, `config without ${missing}`).to.be.instanceOf(Error);
      expect(err!.stderr).to.contain(`set ${missing} in .env, see .env.example`);
    }
    const { stdout } = await compose(['config']);
    const { parse } = await import('yaml');
    const { services } = parse(stdout) as { services: Record<string, ComposeService> };
    // The compose file holds no secret of its own: what .env says is what the services get.
    expect(readFileSync('docker-compose.yml', 'utf8')).not.to.match(/replace-me/);
    expect(services['ingest-gateway']!.environment!.HEARTBEAT_KEY).to.equal(COMPOSE_SECRETS.HEARTBEAT_KEY);
    expect(services['query-service']!.environment!).to.include(COMPOSE_SECRETS);
    expect(services['check-runner']!.environment!.SECRETS_KEYS).to.equal(COMPOSE_SECRETS.SECRETS_KEYS);
    const hostIp = (p: string | { host_ip?: string }) => (typeof p === 'string' ? p.split(':')[0] : p.host_ip);
    const published = Object.entries(services).flatMap(([name, s]) => (s.ports ?? []).map((p) => [name, hostIp(p)]));
    expect(published.map(([name]) => name).sort()).to.deep.equal(['clickhouse', 'ingest-gateway', 'query-service']);
    for (const [name, ip] of published) expect(ip, name).to.equal('127.0.0.1');
  });

  it('docker-compose with the values of .env.example: every service that reads them refuses to start', async () => {
    const { stdout } = await compose(['--env-file', '.env.example', 'config'], {});
    const { parse } = await import('yaml');
    const { services } = parse(stdout) as { services: Record<string, ComposeService> };
    const loaders: Record<string, (env: Env) => unknown> = {
      'ingest-gateway': loadGatewayConfig,
      'stream-consumer': loadConsumerConfig,
      'query-service': loadQueryConfig,
      'check-runner': loadRunnerConfig,
    };
    const refused: string[] = [];
    for (const [name, load] of Object.entries(loaders)) {
      try {
        load(services[name]!.environment!);
      } catch (e) {
        expect(e, name).to.be.instanceOf(ConfigError);
        refused.push(...(e as ConfigError).problems.map((p) => `${name}: ${p.split(' ')[0]}`));
        expect((e as Error).message, name).not.to.contain('replace-me');
      }
    }
    expect(refused.sort()).to.deep.equal([
      'check-runner: SECRETS_KEYS',
      'ingest-gateway: HEARTBEAT_KEY',
      'query-service: HEARTBEAT_KEY',
      'query-service: SECRETS_KEYS',
    ]);
  });

  it('the example overlay builds with kustomize and validates against the Kubernetes 1.33 schemas', async () => {
    const { stdout: built } = await run(join(bin, 'kustomize'), ['build', 'deploy/k8s/overlays/example'], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const file = join(process.env.TMPDIR ?? '/tmp', `k8s-${process.pid}.yaml`);
    (await import('node:fs')).writeFileSync(file, built);
    const { stdout, stderr } = await run('kubernetes-validate', ['--strict', '-k', '1.33.0', file]);
    const lines = (stdout + stderr).split('\n').filter(Boolean);
    expect(lines.filter((l) => l.startsWith('ERROR'))).to.deep.equal([]);
    const passed = lines.filter((l) => l.includes(' passed for resource '));
    for (const kind of [
      'deployment/ingest-gateway',
      'deployment/stream-consumer',
      'deployment/query-service',
      'deployment/check-runner',
      'horizontalpodautoscaler/ingest-gateway',
      'poddisruptionbudget/stream-consumer',
      'poddisruptionbudget/check-runner',
      'job/telemetry-provision',
      'secret/telemetry-clickhouse-',
      'secret/telemetry-clickhouse-registry-',
      'secret/telemetry-postgres-',
      'networkpolicy/telemetry-postgres',
      'networkpolicy/telemetry-default-deny',
      'networkpolicy/check-runner-internet',
    ]) {
      expect(
        passed.some((l) => l.includes(kind)),
        kind,
      ).to.equal(true);
    }
  });

  it('scales the consumer on lag with KEDA, never beyond the partition count', async () => {
    const { stdout: built } = await run(join(bin, 'kustomize'), ['build', 'deploy/k8s/overlays/example'], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const { parseAllDocuments } = await import('yaml');
    const docs = parseAllDocuments(built).map(
      (d) =>
        d.toJSON() as {
          kind: string;
          apiVersion: string;
          spec?: Record<string, unknown>;
          data?: Record<string, string>;
        },
    );
    const so = docs.find((d) => d.kind === 'ScaledObject')!;
    // The fields of KEDA's ScaledObject CRD that we use (its schema is not among Kubernetes' own).
    expect(so.apiVersion).to.equal('keda.sh/v1alpha1');
    const spec = so.spec as {
      scaleTargetRef: { name: string };
      minReplicaCount: number;
      maxReplicaCount: number;
      triggers: { type: string; metadata: Record<string, string> }[];
    };
    expect(spec.scaleTargetRef.name).to.equal('stream-consumer');
    expect(spec.minReplicaCount).to.be.a('number').and.at.least(1);
    expect(spec.triggers.map((t) => t.type)).to.deep.equal(['kafka', 'kafka']);
    for (const t of spec.triggers) {
      expect(t.metadata).to.include.all.keys('bootstrapServers', 'consumerGroup', 'topic', 'lagThreshold');
      expect(t.metadata.consumerGroup).to.equal('telemetry-clickhouse-writer');
    }
    expect(spec.triggers.map((t) => t.metadata.topic).sort()).to.deep.equal([
      'monitor.check-results',
      'telemetry.events',
    ]);
    const partitions = Number(docs.find((d) => d.kind === 'ConfigMap')!.data!.TOPIC_PARTITIONS);
    expect(so.spec!.maxReplicaCount).to.be.at.most(partitions);
  });

  it('runs two check runners without an autoscaler, and gives the query service its registry user', async () => {
    const { stdout: built } = await run(join(bin, 'kustomize'), ['build', 'deploy/k8s/overlays/example'], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const { parseAllDocuments } = await import('yaml');
    interface Container {
      env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
      ports?: { name: string; containerPort: number }[];
      readinessProbe?: { httpGet: { path: string; port: string } };
      livenessProbe?: { httpGet: { path: string; port: string } };
    }
    interface Doc {
      kind: string;
      metadata: { name: string };
      data?: Record<string, string>;
      spec?: {
        replicas?: number;
        scaleTargetRef?: { name: string };
        template?: { spec: { terminationGracePeriodSeconds?: number; containers: Container[] } };
      };
    }
    const docs = parseAllDocuments(built).map((d) => d.toJSON() as Doc);
    const config = docs.find((d) => d.kind === 'ConfigMap')!.data!;
    expect(config).to.include({ ALERTS_TOPIC: 'monitor.alerts', MONITOR_CHANGES_TOPIC: 'monitor.changes' });
    expect(config.KAFKA_BROKERS).to.be.a('string');
    const deployment = (name: string): Doc => docs.find((d) => d.kind === 'Deployment' && d.metadata.name === name)!;

    const runner = deployment('check-runner');
    // Runners beyond the partition count of monitor.changes own no monitors.
    expect(runner.spec!.replicas).to.equal(2);
    expect(runner.spec!.replicas).to.be.at.most(Number(config.TOPIC_PARTITIONS));
    expect(docs.filter((d) => d.spec?.scaleTargetRef?.name === 'check-runner')).to.deep.equal([]);
    expect(docs.some((d) => d.kind === 'PodDisruptionBudget' && d.metadata.name === 'check-runner')).to.equal(true);
    const [c] = runner.spec!.template!.spec.containers;
    expect(c!.ports).to.deep.equal([{ name: 'http', containerPort: 8083 }]);
    expect(c!.readinessProbe!.httpGet).to.deep.equal({ path: '/readyz', port: 'http' });
    expect(c!.livenessProbe!.httpGet).to.deep.equal({ path: '/healthz', port: 'http' });
    expect(c!.env!.find((e) => e.name === 'SERVICE')!.value).to.equal('check-runner');

    const secrets = new Map(docs.filter((d) => d.kind === 'Secret').map((d) => [d.metadata.name, d.data ?? {}]));
    for (const d of docs.filter((x) => x.kind === 'Deployment')) {
      const spec = d.spec!.template!.spec;
      for (const e of spec.containers.flatMap((x) => x.env ?? [])) {
        const ref = e.valueFrom?.secretKeyRef;
        // Every secret a pod reads is generated by the overlay (under its hashed name).
        if (ref) expect(secrets.get(ref.name), `${d.metadata.name} ${e.name}`).to.have.property(ref.key);
        // The graceful shutdown ends before Kubernetes kills the pod.
        if (e.name === 'SHUTDOWN_TIMEOUT_MS') {
          expect(Number(e.value), d.metadata.name).to.be.below((spec.terminationGracePeriodSeconds ?? 30) * 1000);
        }
      }
    }
    const queryEnv = deployment('query-service').spec!.template!.spec.containers[0]!.env!;
    const ref = (name: string): string | undefined =>
      queryEnv.find((e) => e.name === name)?.valueFrom?.secretKeyRef?.name;
    expect(ref('REGISTRY_CLICKHOUSE_USER')).to.match(/^telemetry-clickhouse-registry-/);
    expect(ref('REGISTRY_CLICKHOUSE_PASSWORD')).to.match(/^telemetry-clickhouse-registry-/);
    expect(ref('CLICKHOUSE_USER')).to.match(/^telemetry-clickhouse-query-/);
    // Each workload reads its own ClickHouse secret; only the provisioning Job the admin's.
    const clickhouseSecret = (d: Doc): string[] =>
      (d.spec!.template!.spec.containers[0]!.env ?? [])
        .filter((e) => e.name === 'CLICKHOUSE_USER')
        .map((e) => e.valueFrom!.secretKeyRef!.name.replace(/-[a-z0-9]{10}$/, ''));
    const owners = docs
      .filter((d) => d.kind === 'Deployment' || d.kind === 'Job')
      .map((d) => [d.metadata.name, clickhouseSecret(d)[0]]);
    expect(Object.fromEntries(owners)).to.deep.equal({
      'ingest-gateway': 'telemetry-clickhouse-ingest',
      'stream-consumer': 'telemetry-clickhouse-consumer',
      'query-service': 'telemetry-clickhouse-query',
      'check-runner': 'telemetry-clickhouse-runner',
      'telemetry-provision': 'telemetry-clickhouse',
    });
    // The same for PostgreSQL: each service's DATABASE_URL is its own role's, from its own
    // Secret; only the provisioning Job has the owner's. The consumer's runs deletion requests.
    const databaseUrl = (d: Doc): { secret: string; user: string } | undefined => {
      const ref = (d.spec!.template!.spec.containers[0]!.env ?? []).find((e) => e.name === 'DATABASE_URL')?.valueFrom
        ?.secretKeyRef;
      if (!ref) return undefined;
      const url = Buffer.from(secrets.get(ref.name)![ref.key]!, 'base64').toString();
      return { secret: ref.name.replace(/-[a-z0-9]{10}$/, ''), user: new URL(url).username };
    };
    const pgOwners = docs
      .filter((d) => d.kind === 'Deployment' || d.kind === 'Job')
      .map((d) => [d.metadata.name, databaseUrl(d)]);
    expect(Object.fromEntries(pgOwners)).to.deep.equal({
      'ingest-gateway': { secret: 'telemetry-postgres-ingest', user: pgRoleName('telemetry', 'ingest') },
      'stream-consumer': { secret: 'telemetry-postgres-consumer', user: pgRoleName('telemetry', 'consumer') },
      'query-service': { secret: 'telemetry-postgres-query', user: pgRoleName('telemetry', 'query') },
      'check-runner': { secret: 'telemetry-postgres-runner', user: pgRoleName('telemetry', 'runner') },
      'telemetry-provision': { secret: 'telemetry-postgres', user: 'telemetry' },
    });
  });

  it('Kubernetes: default-deny NetworkPolicies, and the runners reach the internet but no private range', async () => {
    const { stdout: built } = await run(join(bin, 'kustomize'), ['build', 'deploy/k8s/overlays/example'], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const { parseAllDocuments } = await import('yaml');
    interface Peer {
      ipBlock?: { cidr: string; except?: string[] };
      namespaceSelector?: object;
      podSelector?: object;
    }
    interface Policy {
      kind: string;
      metadata: { name: string };
      spec: {
        podSelector: {
          matchLabels?: Record<string, string>;
          matchExpressions?: { key: string; operator: string; values: string[] }[];
        };
        policyTypes: string[];
        ingress?: { from?: Peer[]; ports?: { port: number | string }[] }[];
        egress?: { to?: Peer[]; ports?: { port: number | string }[] }[];
      };
    }
    const docs = parseAllDocuments(built).map((d) => d.toJSON() as Policy);
    const policies = docs.filter((d) => d.kind === 'NetworkPolicy');
    const deny = policies.find((p) => p.metadata.name === 'telemetry-default-deny')!;
    expect(deny.spec.podSelector).to.deep.equal({});
    expect(deny.spec.policyTypes).to.have.members(['Ingress', 'Egress']);
    expect(deny.spec.ingress ?? []).to.deep.equal([]);
    expect(deny.spec.egress ?? []).to.deep.equal([]);
    const selects = (p: Policy, app: string): boolean => {
      const sel = p.spec.podSelector;
      if (!sel.matchLabels && !sel.matchExpressions) return true;
      if (sel.matchLabels) return sel.matchLabels['app.kubernetes.io/name'] === app;
      return sel.matchExpressions!.some((e) => e.operator === 'In' && e.values.includes(app));
    };
    const egressOf = (app: string) =>
      policies
        .filter((p) => p.spec.policyTypes.includes('Egress') && selects(p, app))
        .flatMap((p) => p.spec.egress ?? []);
    const ingressOf = (app: string) =>
      policies
        .filter((p) => p.spec.policyTypes.includes('Ingress') && selects(p, app))
        .flatMap((p) => p.spec.ingress ?? []);
    const ports = (rules: { ports?: { port: number | string }[] }[]) =>
      new Set(rules.flatMap((r) => (r.ports ?? []).map((x) => String(x.port))));
    // Nothing but DNS, Kafka, ClickHouse and (the tiers that use the registry) PostgreSQL
    // inside; ipBlocks only for the runners.
    for (const app of ['ingest-gateway', 'stream-consumer', 'query-service', 'telemetry-provision']) {
      const rules = egressOf(app);
      const expected = ['53', '5432', '8123', '9092'];
      expect([...ports(rules)].sort(), app).to.deep.equal(expected);
      expect(
        rules.flatMap((r) => r.to ?? []).filter((t) => t.ipBlock),
        app,
      ).to.deep.equal([]);
    }
    expect([...ports(egressOf('check-runner'))], 'the runners read the registry').to.include('5432');
    const runnerBlocks = egressOf('check-runner')
      .flatMap((r) => r.to ?? [])
      .flatMap((t) => (t.ipBlock ? [t.ipBlock] : []));
    const v4 = runnerBlocks.find((b) => b.cidr === '0.0.0.0/0')!;
    expect(v4.except).to.include.members([
      '10.0.0.0/8',
      '172.16.0.0/12',
      '192.168.0.0/16',
      '169.254.0.0/16',
      '127.0.0.0/8',
    ]);
    const v6 = runnerBlocks.find((b) => b.cidr === '::/0')!;
    expect(v6.except).to.include.members(['fc00::/7', 'fe80::/10', '::1/128']);
    // Only the two public APIs take traffic from anywhere; the others from the cluster (metrics).
    for (const app of ['ingest-gateway', 'query-service']) {
      expect(
        ingressOf(app).some((r) => !r.from),
        app,
      ).to.equal(true);
    }
    for (const app of ['stream-consumer', 'check-runner']) {
      const rules = ingressOf(app);
      expect(rules.length, app).to.be.greaterThan(0);
      expect(
        rules.every((r) => r.from && r.from.every((f) => !f.ipBlock)),
        app,
      ).to.equal(true);
    }
    expect(ingressOf('telemetry-provision'), 'the Job takes no traffic').to.deep.equal([]);
  });

  it('the alert rules pass promtool and the dashboard and rules use only metrics we export', async () => {
    const { stdout } = await run('promtool', ['check', 'rules', 'deploy/prometheus/alerts.yaml']);
    expect(stdout).to.contain('SUCCESS');
    const known = definedMetrics();
    const dashboard = JSON.parse(readFileSync('deploy/grafana/telemetry-dashboard.json', 'utf8')) as {
      panels: { targets: { expr: string }[] }[];
    };
    const exprs = [
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)),
      ...[...readFileSync('deploy/prometheus/alerts.yaml', 'utf8').matchAll(/expr: (.*)/g)].map((m) => m[1]!),
    ];
    const used = new Set(exprs.flatMap(metricsIn));
    expect(used.size).to.be.greaterThan(8);
    for (const m of used) expect(known, `${m} is not a metric we export`).to.include(m);
  });

  it('the registry alerts fire on a stale change feed, failing catch-ups and a lagging replica, and not on a healthy one (promtool test rules)', async () => {
    const { parse, stringify } = await import('yaml');
    const rules = (
      parse(readFileSync('deploy/prometheus/alerts.yaml', 'utf8')) as {
        groups: { rules: { alert: string; labels?: Record<string, string>; annotations?: Record<string, string> }[] }[];
      }
    ).groups.flatMap((g) => g.rules);
    /** What promtool should see firing: the rule's labels and its annotations rendered for `labels`. */
    const firing = (alert: string, ...labels: Record<string, string>[]) => {
      const rule = rules.find((r) => r.alert === alert)!;
      expect(rule, alert).to.be.an('object');
      return {
        alertname: alert,
        exp_alerts: labels.map((l) => ({
          exp_labels: { ...l, ...rule.labels },
          exp_annotations: Object.fromEntries(
            Object.entries(rule.annotations ?? {}).map(([k, v]) => [
              k,
              v.replace(/\{\{ \$labels\.([a-z_]+) \}\}/g, (_, name: string) => l[name] ?? ''),
            ]),
          ),
        })),
      };
    };
    const quiet = (alert: string, eval_time: string) => ({ eval_time, alertname: alert, exp_alerts: [] });
    const at = (eval_time: string, x: object) => ({ eval_time, ...x });
    const sync = 'registry_feed_last_sync_timestamp_seconds';
    const gw = (instance: string) => ({ feed: 'ingest-gateway', instance });
    const series = (name: string, labels: Record<string, string>, values: string) => ({
      series: `${name}{${Object.entries(labels)
        .map(([k, v]) => `${k}="${v}"`)
        .join(',')}}`,
      values,
    });
    const tests = [
      {
        // PostgreSQL away from 5m: both gateways stop syncing (the time of their last read stays 300).
        interval: '1m',
        input_series: [series(sync, gw('a'), '0+60x5 300x15'), series(sync, gw('b'), '0+60x5 300x15')],
        alert_rule_test: [
          quiet('TelemetryRegistryUnreachable', '5m'),
          at('10m', firing('TelemetryRegistryUnreachable', { feed: 'ingest-gateway' })),
          quiet('TelemetryRegistryReplicaStale', '10m'),
          at('13m', firing('TelemetryRegistryReplicaStale', gw('a'), gw('b'))),
        ],
      },
      {
        // One replica stale, the other reading: not "unreachable", that replica stale.
        interval: '1m',
        input_series: [series(sync, gw('a'), '0+60x20'), series(sync, gw('b'), '0+60x5 300x15')],
        alert_rule_test: [
          quiet('TelemetryRegistryUnreachable', '15m'),
          at('15m', firing('TelemetryRegistryReplicaStale', gw('b'))),
        ],
      },
      {
        // Catch-ups failing from the start (6 a minute), against none on a healthy feed.
        interval: '1m',
        input_series: [
          series('registry_feed_catchups_total', { feed: 'check-runner', outcome: 'failed', instance: 'a' }, '0+6x30'),
          series('registry_feed_catchups_total', { feed: 'query-service', outcome: 'failed', instance: 'a' }, '0x30'),
          series('registry_feed_catchups_total', { feed: 'query-service', outcome: 'ok', instance: 'a' }, '0+12x30'),
        ],
        alert_rule_test: [
          quiet('TelemetryRegistryCatchUpsFailing', '5m'),
          at('20m', firing('TelemetryRegistryCatchUpsFailing', { feed: 'check-runner' })),
        ],
      },
      {
        // Steady writes: runner a applies them, runner b stops at 50 (5m); query replicas
        // apply them with a scrape's skew between them (no alert).
        interval: '1m',
        input_series: [
          series('registry_feed_sequence', { feed: 'check-runner', instance: 'a' }, '0+10x30'),
          series('registry_feed_sequence', { feed: 'check-runner', instance: 'b' }, '0+10x5 50x25'),
          series('registry_feed_sequence', { feed: 'query-service', instance: 'a' }, '0+10x30'),
          series('registry_feed_sequence', { feed: 'query-service', instance: 'b' }, '0 0+10x29'),
        ],
        alert_rule_test: [
          quiet('TelemetryRegistryReplicasBehind', '7m'),
          at('15m', firing('TelemetryRegistryReplicasBehind', { feed: 'check-runner' })),
        ],
      },
    ];
    const dir = mkdtempSync(join(process.env.TMPDIR ?? '/tmp', 'alerts-'));
    const file = join(dir, 'registry-alerts.test.yaml');
    writeFileSync(
      file,
      stringify({
        rule_files: [join(process.cwd(), 'deploy/prometheus/alerts.yaml')],
        evaluation_interval: '1m',
        tests,
      }),
    );
    const result = await run('promtool', ['test', 'rules', file]).then(
      (r) => r.stdout,
      (e: { stdout: string; stderr: string }) => `${e.stdout}${e.stderr}`,
    );
    rmSync(dir, { recursive: true, force: true });
    expect(result).to.contain('SUCCESS');
  });
});
