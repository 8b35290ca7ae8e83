import { runMain } from '@telemetry/platform';
import { loadConsumerConfig } from './config.js';
import { startConsumer } from './service.js';

// Composition root of the stream consumer: config and dependencies are built in startConsumer.
await runMain('stream-consumer', loadConsumerConfig, startConsumer);
