import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { EventBatchLoad, SlowRequests } from '../../harness/event-batches.js';
import { until } from '../../tools/devstack/poll.js';

/** A loopback gateway stand-in that answers its n-th request with `answers[n]` (then 200). */
function gateway(answers: ((req: IncomingMessage, res: ServerResponse) => void)[]): Promise<Server> {
  let n = 0;
  const server = createServer((req, res) => {
    const answer = answers[n++] ?? ((_, r) => r.end('{"success":true,"data":null}'));
    answer(req, res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const portOf = (s: Server): number => (s.address() as AddressInfo).port;

describe('event batches: the fault and cluster suites load on the load-generator core (unit)', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  it('records every batch: its ids, 200 or what went wrong (status and code, reused socket, timeout), its times', async function () {
    this.timeout(10_000);
    server = await gateway([
      (_, res) => res.end('{"success":true,"data":null}'),
      (_, res) => {
        res.statusCode = 503;
        res.end('{"success":false,"error":"Kafka is unavailable","code":"KAFKA_UNAVAILABLE"}');
      },
      (req) => req.socket.destroy(), // on the kept-alive socket of the 503
      (req) => req.socket.destroy(), // on a new socket
      () => undefined, // never answered: the client's timeout
    ]);
    const load = new EventBatchLoad({
      port: portOf(server),
      key: 'k',
      source: 'unit',
      idPrefix: 'p',
      loops: 1,
      batchSize: 2,
      intervalMs: 10,
      requestTimeoutMs: 500,
    });
    const t0 = Date.now();
    load.start();
    await until('six batches', () => (load.outcomes.length >= 6 ? true : undefined), 8000, 20);
    await load.stop();
    const kinds = load.outcomes.map((o) => o.kind);
    expect(kinds.slice(0, 6)).to.deep.equal([
      '200',
      '503 KAFKA_UNAVAILABLE',
      'ECONNRESET reused',
      'ECONNRESET',
      'timeout',
      '200',
    ]);
    expect(load.outcomes.map((o) => o.ok).slice(0, 6)).to.deep.equal([true, false, false, false, false, true]);
    const ids = load.outcomes.flatMap((o) => o.ids);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(ids.slice(0, 4)).to.deep.equal(['p.0', 'p.1', 'p.2', 'p.3']);
    expect(load.sent).to.equal(ids.length);
    expect(load.outcomes.every((o) => o.start >= t0 && o.end >= o.start)).to.equal(true);
    expect(load.outcomes[4]!.end - load.outcomes[4]!.start).to.be.at.least(450);
    expect(load.firstAckedSince(load.outcomes[1]!.start)).to.equal(load.outcomes[5]);
  });

  it('a slow request sends half its body, and the rest only when finished', async () => {
    const heard: string[] = [];
    server = await gateway([
      (req, res) => {
        let text = '';
        req.on('data', (d: Buffer) => {
          text += d.toString();
          heard.push(text);
        });
        req.on('end', () => res.end('{"success":true,"data":null}'));
      },
    ]);
    const slow = new SlowRequests({
      port: portOf(server),
      key: 'k',
      source: 'unit',
      idPrefix: 's',
      batchSize: 3,
      requestTimeoutMs: 5000,
    });
    slow.open(1);
    await until('half a body', () => (heard.length > 0 ? true : undefined), 5000, 10);
    expect(() => JSON.parse(heard[0]!) as unknown).to.throw();
    const [outcome] = await slow.finish();
    expect(outcome!.kind).to.equal('200');
    expect(outcome!.ids).to.deep.equal(['s.slow0.0', 's.slow0.1', 's.slow0.2']);
    const sent = JSON.parse(heard.at(-1)!) as { events: { id: string; category: string }[] };
    expect(sent.events.map((e) => [e.id, e.category])).to.deep.equal(outcome!.ids.map((id) => [id, 'fault-slow']));
  });
});
