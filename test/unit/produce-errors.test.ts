import { expect } from 'chai';
import type { ProducerMessage } from '@telemetry/platform';
import { MultipleErrors, ProtocolError } from '@platformatic/kafka';
import { Registry } from 'prom-client';
import {
  AppError,
  BatchingPublisher,
  KafkaMessageTooLargeError,
  KafkaUnavailableError,
  produceError,
  type Publisher,
} from '@telemetry/platform';

/** Shaped as kafkajs reports a broker's refusal: a protocol error inside a retry error. */
function protocolError(type: string, retriable: boolean): Error {
  const inner = Object.assign(new Error(type), { type, retriable, name: 'KafkaJSProtocolError' });
  return Object.assign(new Error(`wrapped: ${type}`), { retriable: false, cause: inner });
}

function batching(target: Publisher, lingerMs: number): BatchingPublisher {
  const inFlightMetric = { name: 'test_in_flight', help: 'test' };
  return new BatchingPublisher(target, {
    lingerMs,
    maxBatchMessages: 100,
    maxInFlightMessages: 100,
    registry: new Registry(),
    inFlightMetric,
  });
}

describe('producer errors (unit)', () => {
  it('maps "too large" to 413 KAFKA_MESSAGE_TOO_LARGE, other non-retriable refusals to KAFKA_REJECTED, the rest to 503', () => {
    for (const type of ['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']) {
      const e = produceError(protocolError(type, false));
      expect(e.code).to.equal('KAFKA_MESSAGE_TOO_LARGE');
      expect(e.status).to.equal(413);
    }
    const refused = produceError(protocolError('TOPIC_AUTHORIZATION_FAILED', false));
    expect(refused.code).to.equal('KAFKA_REJECTED');
    expect(refused.message).to.contain('TOPIC_AUTHORIZATION_FAILED');
    expect(produceError(protocolError('NOT_LEADER_FOR_PARTITION', true)).code).to.equal('KAFKA_UNAVAILABLE');
    expect(produceError(new Error('Connection timeout')).code).to.equal('KAFKA_UNAVAILABLE');
    const deadline = new KafkaUnavailableError();
    expect(produceError(deadline)).to.equal(deadline);
  });

  it('reads @platformatic/kafka errors the same way (a ProtocolError inside aggregate errors)', () => {
    const wrapped = (id: string): Error =>
      new MultipleErrors('Producing messages failed.', [new MultipleErrors('retries', [new ProtocolError(id)])]);
    expect(produceError(wrapped('MESSAGE_TOO_LARGE')).code).to.equal('KAFKA_MESSAGE_TOO_LARGE');
    const refused = produceError(wrapped('TOPIC_AUTHORIZATION_FAILED'));
    expect(refused.code).to.equal('KAFKA_REJECTED');
    expect(refused.message).to.contain('TOPIC_AUTHORIZATION_FAILED');
    expect(produceError(wrapped('NOT_LEADER_OR_FOLLOWER')).code).to.equal('KAFKA_UNAVAILABLE');
  });

  it("a batch refused for one caller's messages is sent again per caller: only that caller gets the error", async () => {
    const sent: string[][] = [];
    const target: Publisher = {
      send: (_topic: string, messages: ProducerMessage[]) => {
        sent.push(messages.map((m) => String(m.value)));
        return messages.some((m) => String(m.value) === 'huge')
          ? Promise.reject(new KafkaMessageTooLargeError())
          : Promise.resolve();
      },
    };
    const p = batching(target, 20);
    const results = await Promise.allSettled([
      p.send('t', [{ value: 'a' }]),
      p.send('t', [{ value: 'huge' }]),
      p.send('t', [{ value: 'b' }, { value: 'c' }]),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    const reason = (results[1] as PromiseRejectedResult).reason as AppError;
    expect(reason.code).to.equal('KAFKA_MESSAGE_TOO_LARGE');
    expect(sent[0]).to.deep.equal(['a', 'huge', 'b', 'c']);
    expect(sent.slice(1)).to.have.deep.members([['a'], ['huge'], ['b', 'c']]);
  });

  it('a batch that failed for Kafka itself fails every caller (they retry on 503)', async () => {
    const target: Publisher = { send: () => Promise.reject(new KafkaUnavailableError()) };
    const p = batching(target, 10);
    const results = await Promise.allSettled([p.send('t', [{ value: 'a' }]), p.send('t', [{ value: 'b' }])]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
  });
});
