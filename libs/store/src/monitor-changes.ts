import { createHash } from 'node:crypto';

/** Notice on the monitor-changes topic that a monitor changed; its key is the id. */
export interface MonitorChange {
  id: string;
  version: number;
  deleted: boolean;
}

/**
 * The partition of the monitor-changes topic that carries `id`'s changes, and so the
 * check runner that owns it. The query service produces with it and runners read it.
 */
export function monitorPartition(id: string, partitions: number): number {
  return createHash('sha1').update(id).digest().readUInt32BE(0) % partitions;
}
