import { expect } from 'chai';
import { ConfigError } from '@telemetry/platform';
import { loadGatewayConfig } from '@telemetry/ingest-gateway';

describe('config (unit)', () => {
  const base = { KAFKA_BROKERS: 'localhost:9092', CLICKHOUSE_URL: 'http://localhost:8123' };

  it('applies defaults and freezes the result', () => {
    const c = loadGatewayConfig(base);
    expect(c.port).to.equal(8080);
    expect(c.kafkaBrokers).to.deep.equal(['localhost:9092']);
    expect(Object.isFrozen(c)).to.equal(true);
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

describe('runtime (unit)', () => {
  it('runs on the pinned Node (24 or newer), not the machine default', () => {
    expect(Number(process.versions.node.split('.')[0])).to.be.at.least(24);
  });
});
