import { createSocket, type Socket } from 'node:dgram';

/** Record types the test server answers, by their DNS type number. */
const TYPES = { A: 1, TXT: 16 } as const;

/**
 * A DNS server on loopback UDP for dns monitors' tests: it answers A and TXT questions
 * from `records` (name → type → values) and NXDOMAIN for names it does not know. It
 * counts the questions it got. Nothing else: one question per message, no recursion.
 */
export class TestDnsServer {
  readonly records = new Map<string, { A?: string[]; TXT?: string[] }>();
  questions = 0;
  private socket: Socket | undefined;
  port = 0;

  async start(): Promise<void> {
    this.socket = createSocket('udp4');
    this.socket.on('message', (msg, from) => {
      const answer = this.answer(msg);
      if (answer) this.socket!.send(answer, from.port, from.address);
    });
    await new Promise<void>((r) => this.socket!.bind(0, '127.0.0.1', r));
    this.port = this.socket.address().port;
  }

  private answer(msg: Buffer): Buffer | undefined {
    if (msg.length < 12) return undefined;
    this.questions++;
    // The question: labels up to a zero byte, then its type and class.
    let i = 12;
    const labels: string[] = [];
    while (i < msg.length && msg[i] !== 0) {
      labels.push(msg.subarray(i + 1, i + 1 + msg[i]!).toString('latin1'));
      i += 1 + msg[i]!;
    }
    const questionEnd = i + 5;
    if (questionEnd > msg.length) return undefined;
    const qtype = msg.readUInt16BE(i + 1);
    const known = this.records.get(labels.join('.').toLowerCase());
    const values = qtype === TYPES.A ? known?.A : qtype === TYPES.TXT ? known?.TXT : undefined;
    const rdata = (values ?? []).map((v) =>
      qtype === TYPES.A
        ? Buffer.from(v.split('.').map(Number))
        : Buffer.concat([Buffer.from([v.length]), Buffer.from(v)]),
    );
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // the id
    header.writeUInt16BE(0x8180 | (known ? 0 : 3), 2); // a response, recursion available; NXDOMAIN when unknown
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(rdata.length, 6);
    const records = rdata.map((d) => {
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(d.length, 10);
      return Buffer.concat([rr, d]);
    });
    return Buffer.concat([header, msg.subarray(12, questionEnd), ...records]);
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => (this.socket ? this.socket.close(() => r()) : r()));
  }
}
