export { BatchWriter, byteLimit, WriterStoppedError, type ByteLimit, type RowSink } from './batch-writer.js';
export { consumerSpec, FETCH_BYTES_PER_PARTITION, loadConsumerConfig, type ConsumerConfig } from './config.js';
export { startConsumer, type StreamConsumer } from './service.js';
export {
  ClientEnricher,
  defaultGeoIpFiles,
  GEOIP_PACKAGE,
  GeoIp,
  geoIpFiles,
  loadEnricher,
  parseAgent,
} from './enrichment.js';
export { PagedMmdb } from './mmdb-pages.js';
