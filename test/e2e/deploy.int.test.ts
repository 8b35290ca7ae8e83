import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { loadRunnerConfig } from '@telemetry/check-runner';
import { PG_SERVICE_ROLE_NAMES, pgRoleName, provisionSpec, type PgServiceRole } from '@telemetry/store';
import { loadGatewayConfig } from '@telemetry/ingest-gateway';
import { checkPostgresUrl, ConfigError, loadConfig, newSealingKeyText, type Env } from '@telemetry/platform';
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

/** The Helm chart, rendered as release `telemetry` in namespace `telemetry` for Kubernetes 1.33. */
const CHART = 'deploy/helm/telemetry';
const RELEASE = 'telemetry';
const NAMESPACE = 'telemetry';
const KUBE = '1.33.0';
/** Its two CI value files: the least an installation sets, and one with every operator. */
const CHART_VALUES = {
  minimal: `${CHART}/ci/minimal-values.yaml`,
  operators: `${CHART}/ci/operators-values.yaml`,
};
type ChartValues = keyof typeof CHART_VALUES;
/** What a cluster with KEDA and the Prometheus operator serves. */
const OPERATOR_APIS = ['--api-versions', 'keda.sh/v1alpha1', '--api-versions', 'monitoring.coreos.com/v1'];
const TIERS = ['ingest-gateway', 'stream-consumer', 'query-service', 'check-runner'];
const PG_TIER_ROLES: Record<string, PgServiceRole> = {
  'ingest-gateway': 'ingest',
  'stream-consumer': 'consumer',
  'query-service': 'query',
  'check-runner': 'runner',
};

interface Container {
  env?: {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
  }[];
  envFrom?: object[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { httpGet: { path: string; port: string } };
  livenessProbe?: { httpGet: { path: string; port: string } };
  securityContext?: Record<string, unknown>;
}
interface Doc {
  kind: string;
  apiVersion: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>;
  spec?: {
    replicas?: number;
    scaleTargetRef?: { name: string };
    template?: {
      metadata?: { labels?: Record<string, string> };
      spec: {
        terminationGracePeriodSeconds?: number;
        restartPolicy?: string;
        securityContext?: { runAsNonRoot?: boolean; runAsGroup?: number; sysctls?: { name: string; value: string }[] };
        containers: Container[];
      };
    };
  };
}

let helmBin = '';
async function helmTemplate(args: string[]): Promise<{ text: string; docs: Doc[] }> {
  const { stdout } = await run(
    join(helmBin, 'helm'),
    ['template', RELEASE, CHART, '--namespace', NAMESPACE, '--kube-version', KUBE, ...args],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  return {
    text: stdout,
    docs: parseAllDocuments(stdout)
      .map((d) => d.toJSON() as Doc)
      .filter(Boolean),
  };
}

const renders = new Map<ChartValues, Promise<{ text: string; docs: Doc[] }>>();
/** The chart with a CI value file (the operators' with their APIs), rendered once. */
function rendered(name: ChartValues): Promise<{ text: string; docs: Doc[] }> {
  if (!renders.has(name)) {
    renders.set(name, helmTemplate(['-f', CHART_VALUES[name], ...(name === 'operators' ? OPERATOR_APIS : [])]));
  }
  return renders.get(name)!;
}

const configMap = (docs: Doc[]): Record<string, string> =>
  docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'telemetry-config')!.data!;
const deployment = (docs: Doc[], tier: string): Doc =>
  docs.find((d) => d.kind === 'Deployment' && d.metadata.name === `telemetry-${tier}`)!;

/** The chart's values with a value file over them (maps merge, as Helm merges them). */
function parseValues(file: string): unknown {
  const merge = (a: unknown, b: unknown): unknown => {
    if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
      const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
      for (const [k, v] of Object.entries(b)) out[k] = merge(out[k], v);
      return out;
    }
    return b === undefined ? a : b;
  };
  return merge(parseYaml(readFileSync(`${CHART}/values.yaml`, 'utf8')), parseYaml(readFileSync(file, 'utf8')));
}

/** The fields of a values object that name a key of its existingSecret. */
const SECRET_KEY_FIELDS = ['key', 'urlKey', 'userKey', 'usernameKey', 'passwordKey'];

/** `secret/key` of every Secret reference in the values. */
function secretRefs(values: unknown): string[] {
  const out: string[] = [];
  const walk = (x: unknown): void => {
    if (!x || typeof x !== 'object') return;
    const o = x as Record<string, unknown>;
    if (typeof o.existingSecret === 'string' && o.existingSecret) {
      for (const f of SECRET_KEY_FIELDS) {
        const key = o[f];
        if (typeof key === 'string') out.push(`${o.existingSecret}/${key}`);
      }
    }
    Object.values(o).forEach(walk);
  };
  walk(values);
  return out;
}

/** The deployment material, checked by real tools (tools/validators/install.sh installs them). */
describe('deploy material (real validators)', function () {
  this.timeout(600_000);
  let bin = '';

  before(async () => {
    bin = (await run('bash', ['tools/validators/install.sh'], { maxBuffer: 16 * 1024 * 1024 })).stdout.trim();
    helmBin = bin;
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

  it('helm lint passes on the chart with its defaults and with each CI value file', async () => {
    for (const values of [[], ...Object.values(CHART_VALUES).map((f) => ['-f', f])]) {
      const { stdout } = await run(join(bin, 'helm'), ['lint', '--strict', '--kube-version', KUBE, CHART, ...values]);
      expect(stdout, values.join(' ')).to.contain('1 chart(s) linted, 0 chart(s) failed');
    }
  });

  for (const [name, file] of Object.entries(CHART_VALUES) as [ChartValues, string][]) {
    it(`helm template with ${file} validates against the Kubernetes 1.33 schemas`, async () => {
      const { text } = await rendered(name);
      const out = join(process.env.TMPDIR ?? '/tmp', `helm-${name}-${process.pid}.yaml`);
      writeFileSync(out, text);
      const { stdout, stderr } = await run('kubernetes-validate', ['--strict', '-k', '1.33.0', out]);
      rmSync(out, { force: true });
      const lines = (stdout + stderr).split('\n').filter(Boolean);
      expect(lines.filter((l) => l.startsWith('ERROR'))).to.deep.equal([]);
      const passed = lines.filter((l) => l.includes(' passed for resource '));
      for (const kind of [
        'deployment/telemetry-ingest-gateway',
        'deployment/telemetry-stream-consumer',
        'deployment/telemetry-query-service',
        'deployment/telemetry-check-runner',
        'horizontalpodautoscaler/telemetry-ingest-gateway',
        'horizontalpodautoscaler/telemetry-query-service',
        'poddisruptionbudget/telemetry-stream-consumer',
        'poddisruptionbudget/telemetry-check-runner',
        'service/telemetry-query-service',
        'configmap/telemetry-config',
        'job/telemetry-provision',
        'networkpolicy/telemetry-postgresql',
        'networkpolicy/telemetry-default-deny',
        'networkpolicy/telemetry-check-runner-internet',
      ]) {
        expect(
          passed.some((l) => l.endsWith(`${kind} against version 1.33`)),
          kind,
        ).to.equal(true);
      }
      // What kubernetes-validate has no schema for is the operators' resources, and only those,
      // only with the operators' APIs: their fields are checked below.
      const unknown = lines.filter((l) => l.includes("Couldn't find schema")).map((l) => l.split(' for kind ')[1]);
      expect(unknown.sort(), name).to.deep.equal(
        name === 'operators'
          ? [
              'PrometheusRule with api version monitoring.coreos.com/v1 for kubernetes version 1.33',
              'ScaledObject with api version keda.sh/v1alpha1 for kubernetes version 1.33',
              'ServiceMonitor with api version monitoring.coreos.com/v1 for kubernetes version 1.33',
            ]
          : [],
      );
      // Nothing secret comes from the chart: every Secret exists before it.
      expect(
        (await rendered(name)).docs.filter((d) => d.kind === 'Secret'),
        'Secrets rendered',
      ).to.deep.equal([]);
    });
  }

  it('the operators resources follow their APIs: when the cluster serves them, or when a value says so', async () => {
    const kinds = async (args: string[]) =>
      (await helmTemplate(args)).docs
        .filter((d) => ['ScaledObject', 'ServiceMonitor', 'PrometheusRule'].includes(d.kind))
        .map((d) => d.kind)
        .sort();
    expect(await kinds(['-f', CHART_VALUES.minimal])).to.deep.equal([]);
    expect(await kinds(['-f', CHART_VALUES.minimal, ...OPERATOR_APIS])).to.deep.equal([
      'PrometheusRule',
      'ScaledObject',
      'ServiceMonitor',
    ]);
    // Forced on without the APIs (a cluster whose operator comes later), forced off with them.
    expect(
      await kinds([
        '-f',
        CHART_VALUES.minimal,
        '--set',
        'monitoring.enabled=true',
        '--set',
        'streamConsumer.autoscaling.keda.enabled=true',
      ]),
    ).to.deep.equal(['PrometheusRule', 'ScaledObject', 'ServiceMonitor']);
    expect(
      await kinds([
        '-f',
        CHART_VALUES.operators,
        ...OPERATOR_APIS,
        '--set',
        'monitoring.enabled=false',
        '--set',
        'streamConsumer.autoscaling.keda.enabled=false',
      ]),
    ).to.deep.equal([]);
    expect(
      await kinds(['-f', CHART_VALUES.operators, ...OPERATOR_APIS, '--set', 'monitoring.prometheusRule.enabled=false']),
    ).to.deep.equal(['ScaledObject', 'ServiceMonitor']);
  });

  it('scales the consumer on lag with KEDA, never beyond the partition count', async () => {
    const { docs } = await rendered('operators');
    const so = docs.find((d) => d.kind === 'ScaledObject')!;
    // The fields of KEDA's ScaledObject CRD that we use (its schema is not among Kubernetes' own).
    expect(so.apiVersion).to.equal('keda.sh/v1alpha1');
    const spec = so.spec as unknown as {
      scaleTargetRef: { name: string };
      minReplicaCount: number;
      maxReplicaCount: number;
      pollingInterval: number;
      cooldownPeriod: number;
      triggers: { type: string; metadata: Record<string, string> }[];
    };
    expect(spec.scaleTargetRef.name).to.equal('telemetry-stream-consumer');
    expect(docs.some((d) => d.kind === 'Deployment' && d.metadata.name === spec.scaleTargetRef.name)).to.equal(true);
    expect(spec.minReplicaCount).to.be.a('number').and.at.least(1);
    expect(spec.pollingInterval).to.be.a('number');
    expect(spec.cooldownPeriod).to.be.a('number');
    expect(spec.triggers.map((t) => t.type)).to.deep.equal(['kafka', 'kafka']);
    const config = configMap(docs);
    for (const t of spec.triggers) {
      expect(t.metadata).to.include.all.keys('bootstrapServers', 'consumerGroup', 'topic', 'lagThreshold');
      expect(t.metadata.consumerGroup).to.equal('telemetry-clickhouse-writer');
      expect(t.metadata.consumerGroup).to.equal(config.CONSUMER_GROUP_ID);
      expect(t.metadata.bootstrapServers).to.equal(config.KAFKA_BROKERS);
      expect(t.metadata.lagThreshold).to.match(/^[1-9][0-9]*$/);
      expect(t.metadata.allowIdleConsumers).to.equal('false');
    }
    expect(spec.triggers.map((t) => t.metadata.topic).sort()).to.deep.equal([
      'monitor.check-results',
      'telemetry.events',
    ]);
    const partitions = Number(config.TOPIC_PARTITIONS);
    expect(spec.maxReplicaCount).to.equal(12).and.to.be.at.most(partitions);
    // KEDA owns the replica count: the Deployment does not fight it on every upgrade.
    expect(deployment(docs, 'stream-consumer').spec!.replicas).to.equal(undefined);
    // Without KEDA the consumer runs its fixed replicas, at most the partitions.
    const minimal = (await rendered('minimal')).docs;
    expect(minimal.some((d) => d.kind === 'ScaledObject')).to.equal(false);
    expect(deployment(minimal, 'stream-consumer').spec!.replicas).to.equal(1);
    // The chart refuses a consumer or a runner that could own no partition.
    for (const set of [
      'streamConsumer.autoscaling.keda.maxReplicaCount=13',
      'streamConsumer.replicas=13',
      'checkRunner.replicas=13',
    ]) {
      const err = await helmTemplate(['-f', CHART_VALUES.operators, ...OPERATOR_APIS, '--set', set]).then(
        () => undefined,
        (e: unknown) => e as { stderr: string },
      );
      expect(err?.stderr, set).to.contain('must be at most kafka.topicPartitions (12)');
    }
  });

  it('ServiceMonitor scrapes every tier, PrometheusRule holds deploy/prometheus/alerts.yaml', async () => {
    const { parse } = await import('yaml');
    const { docs } = await rendered('operators');
    const sm = docs.find((d) => d.kind === 'ServiceMonitor')!;
    expect(sm.apiVersion).to.equal('monitoring.coreos.com/v1');
    // kube-prometheus-stack finds them by its release label (monitoring.labels).
    expect(sm.metadata.labels).to.include({ release: 'kube-prometheus-stack' });
    const smSpec = sm.spec as unknown as {
      selector: { matchLabels: Record<string, string> };
      namespaceSelector: { matchNames: string[] };
      endpoints: { port: string; path: string; interval: string }[];
    };
    expect(smSpec.namespaceSelector.matchNames).to.deep.equal([NAMESPACE]);
    expect(smSpec.endpoints).to.have.length(1);
    expect(smSpec.endpoints[0]).to.include({ port: 'http', path: '/metrics' });
    // It selects the Service of each tier, each with the port it names.
    const services = docs.filter((d) => d.kind === 'Service');
    const selected = services.filter((s) =>
      Object.entries(smSpec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v),
    );
    expect(selected.map((s) => s.metadata.name).sort()).to.deep.equal(TIERS.map((t) => `telemetry-${t}`).sort());
    for (const s of selected) {
      const ports = (s.spec as unknown as { ports: { name: string }[] }).ports.map((p) => p.name);
      expect(ports, s.metadata.name).to.include('http');
    }
    const rule = docs.find((d) => d.kind === 'PrometheusRule')!;
    expect(rule.apiVersion).to.equal('monitoring.coreos.com/v1');
    expect(rule.metadata.labels).to.include({ release: 'kube-prometheus-stack' });
    const alerts = readFileSync('deploy/prometheus/alerts.yaml', 'utf8');
    // The chart's copy is the rules file (Helm reads files inside the chart only).
    expect(
      readFileSync(`${CHART}/files/alerts.yaml`, 'utf8'),
      `cp deploy/prometheus/alerts.yaml ${CHART}/files/`,
    ).to.equal(alerts);
    const ruleSpec = rule.spec as unknown as { groups: { name: string; rules: { alert: string; expr: string }[] }[] };
    expect(ruleSpec).to.deep.equal(parse(alerts));
    expect(ruleSpec.groups.flatMap((g) => g.rules).length).to.be.greaterThan(10);
    // Every metric a rule reads is one we export (as the rules file's own test checks).
    const known = definedMetrics();
    for (const m of new Set(ruleSpec.groups.flatMap((g) => g.rules).flatMap((r) => metricsIn(r.expr)))) {
      expect(known, `${m} is not a metric we export`).to.include(m);
    }
  });

  it('the migrations run as a pre-install and pre-upgrade hook, with the shared settings of their own', async () => {
    for (const name of Object.keys(CHART_VALUES) as ChartValues[]) {
      const { docs } = await rendered(name);
      const job = docs.find((d) => d.kind === 'Job')!;
      expect(job.metadata.name).to.equal('telemetry-provision');
      expect(job.metadata.annotations).to.include({
        'helm.sh/hook': 'pre-install,pre-upgrade',
        'helm.sh/hook-delete-policy': 'before-hook-creation',
      });
      const pod = job.spec!.template!.spec;
      const c = pod.containers[0]!;
      const env = new Map((c.env ?? []).map((e) => [e.name, e]));
      expect(env.get('SERVICE')!.value).to.equal('provision');
      // On install it runs before the release's ConfigMap exists: it carries the settings itself.
      expect(c.envFrom ?? []).to.deep.equal([]);
      for (const [k, v] of Object.entries(configMap(docs))) expect(env.get(k)?.value, `${name} ${k}`).to.equal(v);
      expect(pod.restartPolicy).to.equal('OnFailure');
    }
  });

  it('runs two check runners without an autoscaler, and gives the query service its registry user', async () => {
    const { docs } = await rendered('minimal');
    const config = configMap(docs);
    expect(config).to.include({ ALERTS_TOPIC: 'monitor.alerts', MONITOR_CHANGES_TOPIC: 'monitor.changes' });
    expect(config.KAFKA_BROKERS).to.equal('kafka-0.kafka:9092,kafka-1.kafka:9092,kafka-2.kafka:9092');
    expect(config.CLICKHOUSE_URL).to.equal('http://clickhouse.clickhouse:8123');
    expect(config.MIGRATE_ON_START).to.equal('false');

    const runner = deployment(docs, 'check-runner');
    // Runners beyond the partition count of monitor.changes own no monitors.
    expect(runner.spec!.replicas).to.equal(2);
    expect(runner.spec!.replicas).to.be.at.most(Number(config.TOPIC_PARTITIONS));
    expect(docs.filter((d) => d.spec?.scaleTargetRef?.name === 'telemetry-check-runner')).to.deep.equal([]);
    expect(docs.some((d) => d.kind === 'PodDisruptionBudget' && d.metadata.name === 'telemetry-check-runner')).to.equal(
      true,
    );
    const [c] = runner.spec!.template!.spec.containers;
    expect(c!.ports).to.deep.equal([{ name: 'http', containerPort: 8083 }]);
    expect(c!.readinessProbe!.httpGet).to.deep.equal({ path: '/readyz', port: 'http' });
    expect(c!.livenessProbe!.httpGet).to.deep.equal({ path: '/healthz', port: 'http' });
    expect(c!.env!.find((e) => e.name === 'SERVICE')!.value).to.equal('check-runner');
    // icmp checks: an unprivileged ICMP socket for the runner's group, no capability.
    const podSecurity = runner.spec!.template!.spec.securityContext!;
    expect(podSecurity.sysctls).to.deep.equal([
      { name: 'net.ipv4.ping_group_range', value: `${podSecurity.runAsGroup} ${podSecurity.runAsGroup}` },
    ]);
    // The HPAs scale the gateway and the query service, which leave their replicas to them.
    for (const tier of ['ingest-gateway', 'query-service']) {
      const hpa = docs.find(
        (d) => d.kind === 'HorizontalPodAutoscaler' && d.spec!.scaleTargetRef!.name === `telemetry-${tier}`,
      );
      expect(hpa, tier).to.not.equal(undefined);
      expect(deployment(docs, tier).spec!.replicas, tier).to.equal(undefined);
    }

    for (const name of Object.keys(CHART_VALUES) as ChartValues[]) {
      const all = (await rendered(name)).docs;
      const refs = secretRefs(parseValues(CHART_VALUES[name]));
      for (const d of all.filter((x) => x.kind === 'Deployment' || x.kind === 'Job')) {
        const spec = d.spec!.template!.spec;
        expect(spec.securityContext!.runAsNonRoot, d.metadata.name).to.equal(true);
        for (const x of spec.containers) {
          expect(x.securityContext, d.metadata.name).to.deep.include({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
          });
        }
        for (const e of spec.containers.flatMap((x) => x.env ?? [])) {
          const ref = e.valueFrom?.secretKeyRef;
          // Every secret a pod reads is an existing Secret the values name, with its key.
          if (ref) expect(refs, `${name}: ${d.metadata.name} ${e.name}`).to.include(`${ref.name}/${ref.key}`);
          // The graceful shutdown ends before Kubernetes kills the pod.
          if (e.name === 'SHUTDOWN_TIMEOUT_MS') {
            expect(Number(e.value), d.metadata.name).to.be.below((spec.terminationGracePeriodSeconds ?? 30) * 1000);
          }
        }
      }
    }
    const queryEnv = deployment(docs, 'query-service').spec!.template!.spec.containers[0]!.env!;
    const ref = (name: string): string | undefined =>
      queryEnv.find((e) => e.name === name)?.valueFrom?.secretKeyRef?.name;
    expect(ref('REGISTRY_CLICKHOUSE_USER')).to.equal('telemetry-clickhouse-registry');
    expect(ref('REGISTRY_CLICKHOUSE_PASSWORD')).to.equal('telemetry-clickhouse-registry');
    expect(ref('CLICKHOUSE_USER')).to.equal('telemetry-clickhouse-query');
    // Each workload reads its own ClickHouse secret; only the provisioning Job the admin's.
    const clickhouseSecret = (d: Doc): string | undefined =>
      (d.spec!.template!.spec.containers[0]!.env ?? []).find((e) => e.name === 'CLICKHOUSE_USER')?.valueFrom
        ?.secretKeyRef?.name;
    const owners = docs
      .filter((d) => d.kind === 'Deployment' || d.kind === 'Job')
      .map((d) => [d.metadata.name, clickhouseSecret(d)]);
    expect(Object.fromEntries(owners)).to.deep.equal({
      'telemetry-ingest-gateway': 'telemetry-clickhouse-ingest',
      'telemetry-stream-consumer': 'telemetry-clickhouse-consumer',
      'telemetry-query-service': 'telemetry-clickhouse-query',
      'telemetry-check-runner': 'telemetry-clickhouse-runner',
      'telemetry-provision': 'telemetry-clickhouse',
    });
    // The same for PostgreSQL: each service's DATABASE_URL is its own role's, from its own
    // Secret; only the provisioning Job has the owner's. The consumer's runs deletion requests.
    const databaseUrl = (d: Doc): string | undefined => {
      const e = (d.spec!.template!.spec.containers[0]!.env ?? []).find((x) => x.name === 'DATABASE_URL');
      return e?.valueFrom?.secretKeyRef ? `${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}` : e?.value;
    };
    const pgOwners = (all: Doc[]) =>
      Object.fromEntries(
        all.filter((d) => d.kind === 'Deployment' || d.kind === 'Job').map((d) => [d.metadata.name, databaseUrl(d)]),
      );
    expect(pgOwners(docs)).to.deep.equal({
      'telemetry-ingest-gateway': 'telemetry-postgres-ingest/url',
      'telemetry-stream-consumer': 'telemetry-postgres-consumer/url',
      'telemetry-query-service': 'telemetry-postgres-query/url',
      'telemetry-check-runner': 'telemetry-postgres-runner/url',
      'telemetry-provision': 'telemetry-postgres/url',
    });
    // CloudNativePG: the owner's URI from the Secret the operator makes, each service's URL
    // built from its managed role's basic-auth Secret, which Kubernetes expands in order.
    const operators = (await rendered('operators')).docs;
    const built = 'postgres://$(DATABASE_URL_USER):$(DATABASE_URL_PASSWORD)@telemetry-pg-rw:5432/telemetry';
    expect(pgOwners(operators)).to.deep.equal({
      'telemetry-ingest-gateway': built,
      'telemetry-stream-consumer': built,
      'telemetry-query-service': built,
      'telemetry-check-runner': built,
      'telemetry-provision': 'telemetry-pg-app/uri',
    });
    for (const [tier, role] of Object.entries(PG_TIER_ROLES)) {
      const env = deployment(operators, tier).spec!.template!.spec.containers[0]!.env!;
      const names = env.map((e) => e.name);
      expect(names.indexOf('DATABASE_URL_USER'), tier).to.be.below(names.indexOf('DATABASE_URL'));
      expect(names.indexOf('DATABASE_URL_PASSWORD'), tier).to.be.below(names.indexOf('DATABASE_URL'));
      const secret = (n: string) => env.find((e) => e.name === n)!.valueFrom!.secretKeyRef;
      expect(secret('DATABASE_URL_USER'), tier).to.deep.equal({ name: `telemetry-pg-${role}`, key: 'username' });
      expect(secret('DATABASE_URL_PASSWORD'), tier).to.deep.equal({ name: `telemetry-pg-${role}`, key: 'password' });
      // What the service reads once Kubernetes expanded it passes its config's URL check.
      const expanded = built
        .replace('$(DATABASE_URL_USER)', pgRoleName('telemetry', role))
        .replace('$(DATABASE_URL_PASSWORD)', randomBytes(16).toString('hex'));
      expect(() => checkPostgresUrl(expanded), tier).not.to.throw();
      expect(new URL(expanded).username, tier).to.equal(pgRoleName('telemetry', role));
    }
    // Mail and single sign-on secrets come from their Secrets too.
    const queryOps = deployment(operators, 'query-service').spec!.template!.spec.containers[0]!.env!;
    expect(queryOps.find((e) => e.name === 'SMTP_URL')!.valueFrom!.secretKeyRef).to.deep.equal({
      name: 'telemetry-smtp',
      key: 'url',
    });
    expect(queryOps.find((e) => e.name === 'OIDC_CLIENT_SECRET')!.valueFrom!.secretKeyRef).to.deep.equal({
      name: 'telemetry-oidc',
      key: 'client-secret',
    });
    expect(configMap(operators)).to.include({
      KAFKA_BROKERS: 'telemetry-kafka-bootstrap.kafka:9092',
      CLICKHOUSE_URL: 'http://clickhouse-telemetry.clickhouse:8123',
      CLICKHOUSE_CLUSTER: 'main',
      OIDC_ISSUER: 'https://sso.example.com/realms/ops',
    });
  });

  it('the values hold no secret: every password, key and URL with credentials is an existing Secret', () => {
    for (const file of [`${CHART}/values.yaml`, ...Object.values(CHART_VALUES)]) {
      const walk = (x: unknown, path: string, field: string): void => {
        if (typeof x === 'string') {
          // No URL with credentials, no key ring (id:base64 of 32 bytes), no long hex key.
          expect(x, path).not.to.match(/^[a-z][a-z0-9+.-]*:\/\/[^/@\s]+@/i);
          expect(x, path).not.to.match(/[A-Za-z0-9+/]{43}=|[0-9a-f]{32}/);
          // A field that sounds secret only names a Secret or its key.
          if (/password|secret|token/i.test(field) && !['existingSecret', ...SECRET_KEY_FIELDS].includes(field)) {
            expect(x, path).to.equal('');
          }
        } else if (Array.isArray(x)) x.forEach((v, i) => walk(v, `${path}/${i}`, field));
        else if (x && typeof x === 'object') for (const [k, v] of Object.entries(x)) walk(v, `${path}/${k}`, k);
      };
      const values = parseYaml(readFileSync(file, 'utf8')) as unknown;
      walk(values, file, '');
      // And it does name Secrets: the key ring, the heartbeat key, every user.
      expect(secretRefs(parseValues(file)).length, file).to.be.at.least(15);
    }
  });

  it("each tier's env from the chart, its Secrets filled in, passes that service's own config check", async () => {
    const loaders: Record<string, (env: Env) => unknown> = {
      'telemetry-ingest-gateway': loadGatewayConfig,
      'telemetry-stream-consumer': loadConsumerConfig,
      'telemetry-query-service': loadQueryConfig,
      'telemetry-check-runner': loadRunnerConfig,
      'telemetry-provision': (env) => loadConfig(provisionSpec, env),
    };
    /** What a Secret holds under a key, made up the way the README makes it. */
    const secretValue = (secret: string, key: string): string => {
      if (/url|uri/.test(key))
        return `postgres://${secret.replace(/-/g, '_')}:${randomBytes(8).toString('hex')}@pg:5432/telemetry`;
      if (/keys/.test(key)) return newSealingKeyText('k1');
      if (/password|heartbeat|^key$/.test(key)) return randomBytes(32).toString('hex');
      return secret.split('-').at(-1)!;
    };
    for (const name of Object.keys(CHART_VALUES) as ChartValues[]) {
      const { docs } = await rendered(name);
      const config = configMap(docs);
      const workloads = docs.filter((d) => d.kind === 'Deployment' || d.kind === 'Job');
      expect(workloads.map((d) => d.metadata.name).sort()).to.deep.equal(Object.keys(loaders).sort());
      for (const d of workloads) {
        const [c] = d.spec!.template!.spec.containers;
        // As the kubelet builds it: the ConfigMap first, then env in order, $(VAR) expanded.
        const env: Record<string, string> = c!.envFrom?.length ? { ...config } : {};
        for (const e of c!.env ?? []) {
          const ref = e.valueFrom?.secretKeyRef;
          if (ref) env[e.name] = secretValue(ref.name, ref.key);
          else if (e.valueFrom?.fieldRef) env[e.name] = `${d.metadata.name}-abc12`;
          else env[e.name] = (e.value ?? '').replace(/\$\(([A-Z_]+)\)/g, (_, v: string) => env[v] ?? '');
        }
        expect(() => loaders[d.metadata.name]!(env), `${name}: ${d.metadata.name}`).not.to.throw();
        expect(env.SERVICE, d.metadata.name).to.equal(
          d.metadata.name.replace(/^telemetry-(provision)?/, '') || 'provision',
        );
      }
    }
  });

  it('the chart refuses to render without a Secret a tier reads, naming the value', async () => {
    for (const [set, message] of [
      ['secretsKeys.existingSecret=', 'secretsKeys: existingSecret is required'],
      ['heartbeatKey.key=', 'heartbeatKey: key is required'],
      [
        'clickhouse.credentials.registry.existingSecret=',
        'clickhouse.credentials.registry: existingSecret is required',
      ],
      ['postgresql.credentials.runner.urlKey=', 'postgresql.credentials.runner: urlKey is required'],
      ['postgresql.credentials.query.usernameKey=username', 'postgresql.credentials.query: passwordKey is required'],
    ]) {
      const err = await helmTemplate(['-f', CHART_VALUES.minimal, '--set', set!]).then(
        () => undefined,
        (e: unknown) => e as { stderr: string },
      );
      expect(err?.stderr, set).to.contain(message);
    }
  });

  it('Kubernetes: default-deny NetworkPolicies, and the runners reach the internet but no private range', async () => {
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
    for (const name of Object.keys(CHART_VALUES) as ChartValues[]) {
      const docs = (await rendered(name)).docs as unknown as Policy[];
      const policies = docs.filter((d) => d.kind === 'NetworkPolicy');
      const deny = policies.find((p) => p.metadata.name === 'telemetry-default-deny')!;
      // The minimal values deny in the whole namespace; the operators' (CloudNativePG shares
      // the namespace) this release's pods only.
      expect(deny.spec.podSelector, name).to.deep.equal(
        name === 'minimal' ? {} : { matchLabels: { 'app.kubernetes.io/instance': RELEASE } },
      );
      expect(deny.spec.policyTypes).to.have.members(['Ingress', 'Egress']);
      expect(deny.spec.ingress ?? []).to.deep.equal([]);
      expect(deny.spec.egress ?? []).to.deep.equal([]);
      /** Whether a policy applies to a tier's pods (labelled as the Deployments label them). */
      const selects = (p: Policy, app: string): boolean => {
        const labels: Record<string, string> = { 'app.kubernetes.io/name': app, 'app.kubernetes.io/instance': RELEASE };
        const sel = p.spec.podSelector;
        return (
          Object.entries(sel.matchLabels ?? {}).every(([k, v]) => labels[k] === v) &&
          (sel.matchExpressions ?? []).every((e) => e.operator === 'In' && e.values.includes(labels[e.key] ?? ''))
        );
      };
      // The labels the test assumes are the pods' own.
      for (const tier of TIERS) {
        const labels = deployment(docs as unknown as Doc[], tier).spec!.template!.metadata!.labels!;
        expect(labels, tier).to.include({ 'app.kubernetes.io/name': tier, 'app.kubernetes.io/instance': RELEASE });
      }
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
      // Nothing but DNS, Kafka, ClickHouse and PostgreSQL inside; ipBlocks only for the runners
      // (and what networkPolicy.extraQueryEgress adds for the query service).
      for (const app of ['ingest-gateway', 'stream-consumer', 'query-service', 'telemetry-provision']) {
        const rules = egressOf(app);
        const extra = app === 'query-service' && name === 'operators' ? ['443', '587'] : [];
        expect([...ports(rules)].sort(), `${name} ${app}`).to.deep.equal(
          ['53', '5432', '8123', '9092', ...extra].sort(),
        );
        const blocks = rules.flatMap((r) => r.to ?? []).filter((t) => t.ipBlock);
        if (!extra.length) expect(blocks, `${name} ${app}`).to.deep.equal([]);
        for (const b of blocks)
          expect(b.ipBlock!.except, `${name} ${app}`).to.include.members(['10.0.0.0/8', '169.254.0.0/16']);
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
      // The operators' values narrow Kafka, ClickHouse and PostgreSQL to their pods' labels.
      if (name === 'operators') {
        const to = (policy: string) =>
          policies.find((p) => p.metadata.name === `telemetry-${policy}`)!.spec.egress![0]!.to;
        expect(to('kafka')).to.deep.equal([
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kafka' } },
            podSelector: { matchLabels: { 'strimzi.io/cluster': 'telemetry', 'strimzi.io/kind': 'Kafka' } },
          },
        ]);
        expect(to('clickhouse')).to.deep.equal([
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'clickhouse' } },
            podSelector: { matchLabels: { 'clickhouse.altinity.com/chi': 'telemetry' } },
          },
        ]);
        expect(to('postgresql')).to.deep.equal([
          { podSelector: { matchLabels: { 'cnpg.io/cluster': 'telemetry-pg' } } },
        ]);
      }
    }
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
