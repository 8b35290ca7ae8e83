export { BatchWriter, WriterStoppedError, type RowSink } from './batch-writer.js';
export { consumerSpec, loadConsumerConfig, type ConsumerConfig } from './config.js';
export { startConsumer, type StreamConsumer } from './service.js';
export { FETCH_BYTES_PER_PARTITION } from './consumer.js';
