/**
 * The Kafka client stage of `npm run bench:consume` (issue 16, item 2): how much CPU each
 * client library spends to read the backlog, with nothing else done to the messages. Each
 * library drains the events topic from the beginning in a new consumer group, with the
 * fetch settings the stream consumer uses, touching every value; nothing is committed.
 * The libraries take turns (kafkajs, then @platformatic/kafka, BENCH_CLIENT_ROUNDS
 * times) so that a noisy moment of the shared machine does not fall on one of them only.
 * Measured in the benchmark's own process (both libraries are plain JavaScript), which
 * does nothing else meanwhile.
 */
import { Consumer as PlatformaticConsumer } from '@platformatic/kafka';
import type { Kafka } from 'kafkajs';
import { median } from '../../harness/report.js';

export type ClientLibrary = 'kafkajs' | 'platformatic';

export interface ClientDrain {
  library: ClientLibrary;
  messages: number;
  /** From creating the consumer until the last message was read. */
  seconds: number;
  /** From the first message read until the last. */
  steadyMessagesPerSecond: number;
  /** This process's CPU time (user + system) over `seconds`, per message. */
  cpuMicrosPerMessage: number;
}

export interface ClientFigures {
  rounds: ClientDrain[];
  /** Medians over the rounds, per library. */
  kafkajs: { steadyMessagesPerSecond: number; cpuMicrosPerMessage: number };
  platformatic: { steadyMessagesPerSecond: number; cpuMicrosPerMessage: number };
  /** kafkajs CPU per message / @platformatic/kafka's (below 1: kafkajs is cheaper). */
  cpuRatio: number;
  /** The library the stream consumer reads with. */
  consumerLibrary: ClientLibrary;
}

export interface ClientOptions {
  kafka: Kafka;
  brokers: string[];
  topic: string;
  messages: number;
  /** The stream consumer's fetch settings (PARTITIONS_CONSUMED_CONCURRENTLY, bytes per partition). */
  partitionsConcurrently: number;
  maxBytesPerPartition: number;
  deadlineMs: number;
}

/** Reads `messages` messages; resolves with the figures of the drain. */
async function measure(
  library: ClientLibrary,
  o: ClientOptions,
  read: (onValues: (bytes: number, count: number) => void) => Promise<() => Promise<void>>,
): Promise<ClientDrain> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let first = NaN;
  let count = 0;
  let bytes = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const close = await read((b, n) => {
    if (Number.isNaN(first)) first = performance.now();
    bytes += b;
    count += n;
    if (count >= o.messages) done();
  });
  let timer: NodeJS.Timeout | undefined;
  let end: number;
  let used: NodeJS.CpuUsage;
  try {
    await Promise.race([
      finished,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${library}: read ${count} of ${o.messages} messages in time`)),
          o.deadlineMs,
        );
      }),
    ]);
    end = performance.now();
    used = process.cpuUsage(cpu0);
  } finally {
    clearTimeout(timer);
    await close();
  }
  if (bytes === 0) throw new Error(`${library}: the messages were empty`);
  return {
    library,
    messages: count,
    seconds: (end - t0) / 1000,
    steadyMessagesPerSecond: count / ((end - first) / 1000),
    cpuMicrosPerMessage: (used.user + used.system) / count,
  };
}

function drainKafkajs(o: ClientOptions, group: string): Promise<ClientDrain> {
  return measure('kafkajs', o, async (onValues) => {
    const consumer = o.kafka.consumer({
      groupId: group,
      maxBytesPerPartition: o.maxBytesPerPartition,
      allowAutoTopicCreation: false,
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [o.topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: o.partitionsConcurrently,
      eachBatch: (payload) => {
        let bytes = 0;
        for (const m of payload.batch.messages) bytes += m.value?.length ?? 0;
        payload.resolveOffset(payload.batch.lastOffset());
        onValues(bytes, payload.batch.messages.length);
        return Promise.resolve();
      },
    });
    return () => consumer.disconnect();
  });
}

function drainPlatformatic(o: ClientOptions, group: string): Promise<ClientDrain> {
  return measure('platformatic', o, async (onValues) => {
    const consumer = new PlatformaticConsumer({
      clientId: 'bench-consume-clients',
      bootstrapBrokers: o.brokers,
      groupId: group,
      maxBytesPerPartition: o.maxBytesPerPartition,
    });
    const stream = await consumer.consume({ topics: [o.topic], mode: 'earliest', autocommit: false });
    stream.on('data', (m) => onValues(m.value?.length ?? 0, 1));
    return async () => {
      await stream.close();
      await consumer.close(true);
    };
  });
}

/** Both libraries, `rounds` turns each, every drain in its own new group (`groupPrefix`-N). */
export async function measureClients(
  o: ClientOptions,
  rounds: number,
  /** The library the stream consumer reads with (its KAFKA_CLIENT). */
  consumerLibrary: ClientLibrary,
  groupPrefix: string,
  log: (line: string) => void,
): Promise<ClientFigures> {
  const all: ClientDrain[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const drain of [drainKafkajs, drainPlatformatic]) {
      const d = await drain(o, `${groupPrefix}-${all.length}`);
      log(
        `clients: ${d.library} read ${d.messages} messages, ${Math.round(d.steadyMessagesPerSecond)} messages/s, ` +
          `${d.cpuMicrosPerMessage.toFixed(2)} µs CPU per message`,
      );
      all.push(d);
    }
  }
  const of = (library: ClientLibrary) => {
    const mine = all.filter((d) => d.library === library);
    return {
      steadyMessagesPerSecond: median(mine.map((d) => d.steadyMessagesPerSecond)),
      cpuMicrosPerMessage: median(mine.map((d) => d.cpuMicrosPerMessage)),
    };
  };
  const kafkajs = of('kafkajs');
  const platformatic = of('platformatic');
  return {
    rounds: all,
    kafkajs,
    platformatic,
    cpuRatio: kafkajs.cpuMicrosPerMessage / platformatic.cpuMicrosPerMessage,
    consumerLibrary,
  };
}
