import { once } from 'node:events';
import { Worker } from 'node:worker_threads';

/**
 * A loopback TCP port that is listened on and never accepted from: once its backlog is
 * full (the first two connections), the kernel drops every further SYN, so a connect
 * hangs as it does against a host that drops SYNs. (A closed port on loopback refuses
 * at once, and a Node server accepts everything.) A worker thread listens, then blocks
 * until `close`, so nothing ever calls accept().
 */
export async function blackHolePort(): Promise<{ port: number; close(): Promise<void> }> {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const { workerData, parentPort } = require('node:worker_threads');
     const server = require('node:net').createServer((s) => s.destroy());
     server.listen({ host: '127.0.0.1', port: 0, backlog: 1 }, () => {
       parentPort.postMessage(server.address().port);
       Atomics.wait(workerData, 0, 0);
       server.close();
     });`,
    { eval: true, workerData: flag },
  );
  const [port] = (await once(worker, 'message')) as [number];
  return {
    port,
    close: async () => {
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
      await worker.terminate();
    },
  };
}
