import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ensureKafkaTools } from '../../tools/devstack/installers.js';

const run = promisify(execFile);

export interface AnchorSettings {
  brokers: string;
  topic: string;
  records: number;
  recordBytes: number;
  lingerMs: number;
  /** Java's batch.size: bytes per partition per request. */
  batchBytes: number;
}

export interface AnchorFigures {
  records: number;
  recordsPerSec: number;
  mbPerSec: number;
  avgLatencyMs: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * Kafka's own producer (org.apache.kafka.tools.ProducerPerformance, the Java client) at
 * full speed with acks=all and idempotence (the Java default): what the broker takes on
 * this machine, the limit our gateway is measured against. Its jars come from Maven
 * Central on first use (tools/devstack/kafka-tools/pom.xml).
 */
export async function producerPerformance(s: AnchorSettings): Promise<AnchorFigures> {
  const jars = await ensureKafkaTools();
  const { stdout } = await run(
    'java',
    [
      '-cp',
      `${jars}/*`,
      'org.apache.kafka.tools.ProducerPerformance',
      '--topic',
      s.topic,
      '--num-records',
      String(s.records),
      '--record-size',
      String(s.recordBytes),
      '--throughput',
      '-1',
      '--producer-props',
      `bootstrap.servers=${s.brokers}`,
      'acks=all',
      'enable.idempotence=true',
      `linger.ms=${s.lingerMs}`,
      `batch.size=${s.batchBytes}`,
    ],
    { maxBuffer: 16 * 1024 * 1024, timeout: 600_000 },
  );
  // "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, ..."
  const last = stdout.trim().split('\n').pop() ?? '';
  const m =
    /^(\d+) records sent, ([\d.]+) records\/sec \(([\d.]+) MB\/sec\), ([\d.]+) ms avg latency.*?(\d+) ms 50th, \d+ ms 95th, (\d+) ms 99th/.exec(
      last,
    );
  if (!m) throw new Error(`ProducerPerformance printed no summary: ${last}`);
  return {
    records: Number(m[1]),
    recordsPerSec: Number(m[2]),
    mbPerSec: Number(m[3]),
    avgLatencyMs: Number(m[4]),
    p50Ms: Number(m[5]),
    p99Ms: Number(m[6]),
  };
}
