import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { ConfigError, newSealingKeyText, type Env } from '@telemetry/platform';
import { loadGatewayConfig } from '@telemetry/ingest-gateway';
import { loadQueryConfig } from '@telemetry/query-service';
import { loadRunnerConfig } from '@telemetry/check-runner';
import { loadConsumerConfig } from '@telemetry/stream-consumer';

describe('config (unit)', () => {
  const base = {
    KAFKA_BROKERS: 'localhost:9092',
    CLICKHOUSE_URL: 'http://localhost:8123',
    DATABASE_URL: 'postgres://svc:pw@localhost:5432/telemetry',
  };

  it('refuses a DATABASE_URL that is not a postgres:// URL, or is missing, without echoing it', () => {
    for (const bad of ['http://u:s3cret-pw@db/telemetry', 'postgres://u:s3cret-pw@db', 'not a url s3cret-pw']) {
      let message = '';
      try {
        loadGatewayConfig({ ...base, DATABASE_URL: bad });
      } catch (err) {
        message = String(err);
      }
      expect(message, bad).to.include('DATABASE_URL');
      expect(message, bad).not.to.include('s3cret-pw');
    }
    const { DATABASE_URL: _url, ...without } = base;
    expect(() => loadRunnerConfig(without)).to.throw(/DATABASE_URL/);
  });

  it('applies defaults and freezes the result', () => {
    const c = loadGatewayConfig(base);
    expect(c.port).to.equal(8080);
    expect(c.kafkaBrokers).to.deep.equal(['localhost:9092']);
    expect(Object.isFrozen(c)).to.equal(true);
  });

  it('refuses MAX_INFLIGHT_BYTES below what a largest request holds (it would get 503 on every retry)', () => {
    expect(() => loadGatewayConfig({ ...base, MAX_INFLIGHT_BYTES: String(16 * 1024 * 1024) })).to.throw(
      ConfigError,
      /MAX_INFLIGHT_BYTES \(16777216\) must be at least MAX_EVENTS_PER_REQUEST \(500\) times 65664 = 32832000/,
    );
    // Fewer events per request make room for a smaller bound.
    const c = loadGatewayConfig({
      ...base,
      MAX_INFLIGHT_BYTES: String(16 * 1024 * 1024),
      MAX_EVENTS_PER_REQUEST: '250',
    });
    expect(c.maxInFlightBytes).to.equal(16 * 1024 * 1024);
  });

  it("validates the consumer's EVENT_DECODER (bytes by default, or json)", () => {
    expect(loadConsumerConfig(base).eventDecoder).to.equal('bytes');
    expect(loadConsumerConfig({ ...base, EVENT_DECODER: 'json' }).eventDecoder).to.equal('json');
    expect(() => loadConsumerConfig({ ...base, EVENT_DECODER: 'fast' })).to.throw(ConfigError, /EVENT_DECODER/);
  });

  it('names every bad or missing variable at once', () => {
    try {
      loadGatewayConfig({ PORT: 'eighty', CLICKHOUSE_URL: 'ftp://x', KAFKA_ACK_TIMEOUT_MS: '5' });
      expect.fail('should throw');
    } catch (e) {
      expect(e).to.be.instanceOf(ConfigError);
      const msg = (e as ConfigError).message;
      for (const name of ['PORT', 'CLICKHOUSE_URL', 'KAFKA_BROKERS', 'KAFKA_ACK_TIMEOUT_MS'])
        expect(msg).to.contain(name);
    }
  });

  it('never echoes a secret value in its error', () => {
    try {
      loadGatewayConfig({ ...base, CLICKHOUSE_PASSWORD: 'hunter2', PORT: '-1' });
    } catch (e) {
      expect((e as Error).message).not.to.contain('hunter2');
    }
  });
});

/**
 * The example secrets we publish: .env.example (docker-compose). The Helm chart publishes none:
 * its values name existing Secrets, and deploy/helm/README.md makes them with openssl.
 */
function publishedExamples(): { HEARTBEAT_KEY: string[]; SECRETS_KEYS: string[] } {
  const env = readFileSync('.env.example', 'utf8');
  const all = (text: string, re: RegExp) => [...text.matchAll(re)].map((m) => m[1]!);
  return {
    HEARTBEAT_KEY: all(env, /^HEARTBEAT_KEY=(\S+)$/gm),
    SECRETS_KEYS: all(env, /^SECRETS_KEYS=(\S+)$/gm),
  };
}

describe('published example secrets (unit)', () => {
  const base = {
    KAFKA_BROKERS: 'localhost:9092',
    CLICKHOUSE_URL: 'http://localhost:8123',
    DATABASE_URL: 'postgres://svc:pw@localhost:5432/telemetry',
  };
  const own = { HEARTBEAT_KEY: randomBytes(32).toString('hex'), SECRETS_KEYS: newSealingKeyText('k1') };
  const loaders: [string, (env: Env) => unknown, ('HEARTBEAT_KEY' | 'SECRETS_KEYS')[]][] = [
    ['ingest gateway', loadGatewayConfig, ['HEARTBEAT_KEY']],
    ['query service', loadQueryConfig, ['HEARTBEAT_KEY', 'SECRETS_KEYS']],
    ['check runner', loadRunnerConfig, ['SECRETS_KEYS']],
  ];
  const examples = publishedExamples();

  it('are found in .env.example', () => {
    expect(examples.HEARTBEAT_KEY).to.have.length(1);
    expect(examples.SECRETS_KEYS).to.have.length(1);
  });

  for (const [service, load, vars] of loaders) {
    it(`stop the ${service} at start-up with a message naming the variable, never the value`, () => {
      expect(() => load({ ...base, ...own })).not.to.throw();
      for (const name of vars) {
        for (const example of examples[name]) {
          // Also as one key of a ring whose first key is good.
          const values = name === 'SECRETS_KEYS' ? [example, `${own.SECRETS_KEYS},${example}`] : [example];
          for (const value of values) {
            let err: unknown;
            try {
              load({ ...base, ...own, [name]: value });
            } catch (e) {
              err = e;
            }
            expect(err, `${service} ${name}=${value}`).to.be.instanceOf(ConfigError);
            const message = (err as Error).message;
            expect(message).to.contain(`${name} is the published example value`);
            expect(message).not.to.contain(example.split(':').at(-1));
          }
        }
      }
    });
  }
});

describe('runtime (unit)', () => {
  it('runs on the pinned Node (24 or newer), not the machine default', () => {
    expect(Number(process.versions.node.split('.')[0])).to.be.at.least(24);
  });
});
