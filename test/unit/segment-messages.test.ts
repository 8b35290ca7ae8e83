import { expect } from 'chai';
import { AppError } from '@telemetry/platform';
import { arrayElementSpans, SEGMENT_LIMITS, segmentEvents, segmentWriteKey } from '@telemetry/ingest-gateway';

const basic = (user: string, password = ''): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
  throw new Error('did not throw');
}

describe('segment: element spans (a message as the client serialised it)', () => {
  it('finds each message of a compact batch exactly as JSON.stringify wrote it', () => {
    const batch = [{ type: 'track', event: 'a]b,"c' }, { type: 'identify', traits: { list: [1, [2, 3]] } }, 'x', 7];
    const text = JSON.stringify({ writeKey: 'k', batch, sentAt: 'now' });
    const spans = arrayElementSpans(text, 'batch')!;
    expect(spans.map(([s, e]: [number, number]) => text.slice(s, e))).to.deep.equal(
      batch.map((m) => JSON.stringify(m)),
    );
  });

  it("keeps a client's own whitespace and escapes (Python's json.dumps writes ', ' and ': ')", () => {
    const text = '{"batch": [ {"type": "track", "event": "\\u00e9t\\u00e9"} ,\n {"type": "page"} ], "sentAt": "x"}';
    const spans = arrayElementSpans(text, 'batch')!;
    expect(spans.map(([s, e]: [number, number]) => text.slice(s, e))).to.deep.equal([
      '{"type": "track", "event": "\\u00e9t\\u00e9"}',
      '{"type": "page"}',
    ]);
  });

  it('reads only the top-level key (nested "batch" ignored), the last one when repeated, and [] as no element', () => {
    const text = '{"context":{"batch":[1,2]},"batch":[{"a":1}],"batch":[{"b":2},{"c":3}]}';
    expect(arrayElementSpans(text, 'batch')!.map(([s, e]: [number, number]) => text.slice(s, e))).to.deep.equal([
      '{"b":2}',
      '{"c":3}',
    ]);
    expect(arrayElementSpans('{"batch":[ ]}', 'batch')).to.deep.equal([]);
    expect(arrayElementSpans('{"batch":{"a":[1]}}', 'batch')).to.equal(undefined);
    expect(arrayElementSpans('{"b\\u0061tch":[1]}', 'batch')).to.deep.equal([[15, 16]]);
  });
});

describe('segment: the write key', () => {
  it('is the Basic user name, writeKey in the body, or in each message; all alike', () => {
    expect(segmentWriteKey(basic('tk_a'), [])).to.equal('tk_a');
    expect(segmentWriteKey(undefined, ['tk_a', undefined])).to.equal('tk_a');
    expect(segmentWriteKey(basic('tk_a'), ['tk_a', 'tk_a'])).to.equal('tk_a');
    expect(segmentWriteKey(undefined, [undefined])).to.equal(undefined);
    expect(segmentWriteKey('', [])).to.equal(undefined);
  });

  it('refuses two different keys, a password, another scheme, an empty user and a non-string writeKey', () => {
    expect(codeOf(() => segmentWriteKey(basic('tk_a'), ['tk_b']))).to.equal('INVALID_CREDENTIALS');
    expect(codeOf(() => segmentWriteKey(undefined, ['tk_a', 'tk_b']))).to.equal('INVALID_CREDENTIALS');
    expect(codeOf(() => segmentWriteKey(basic('tk_a', 'secret'), []))).to.equal('INVALID_CREDENTIALS');
    expect(codeOf(() => segmentWriteKey('Bearer tk_a', []))).to.equal('INVALID_CREDENTIALS');
    expect(codeOf(() => segmentWriteKey(basic(''), []))).to.equal('INVALID_CREDENTIALS');
    expect(codeOf(() => segmentWriteKey(undefined, [42]))).to.equal('INVALID_CREDENTIALS');
  });
});

describe('segment: messages to CompatEvents (docs/compat.md)', () => {
  const one = (message: unknown, pathType?: 'track' | 'alias' | 'group' | 'page') =>
    segmentEvents([{ message, pathType, bytes: 100, path: '' }], {});

  it('maps every field of the table', () => {
    const [e] = segmentEvents(
      [
        {
          message: {
            type: 'track',
            event: 'Order Completed',
            messageId: 'm-1',
            userId: 'u1',
            anonymousId: 'a1',
            originalTimestamp: '2026-01-01T00:00:00.000Z',
            timestamp: '2026-01-01T00:00:05.000Z',
            writeKey: 'tk_secret',
            context: { ip: '203.0.113.9', userAgent: 'UA/1', library: { name: 'analytics-node-next' } },
            properties: { total: 3 },
          },
          bytes: 10,
          path: '/batch/0',
        },
      ],
      { sentAt: '2026-01-01T00:00:06.000Z' },
    );
    expect(e).to.deep.include({
      protocol: 'segment',
      clientId: 'm-1',
      category: 'Order Completed',
      library: 'analytics-node-next',
      timestamp: '2026-01-01T00:00:00.000Z',
      sentAt: '2026-01-01T00:00:06.000Z',
      anonymousId: 'a1',
      userId: 'u1',
      clientIp: '203.0.113.9',
      userAgent: 'UA/1',
    });
    // The message as sent, without its credential.
    expect(e!.payload).to.not.have.property('writeKey');
    expect(e!.payload.properties).to.deep.equal({ total: 3 });
  });

  it("takes timestamp without originalTimestamp, the message's sentAt over the batch's, the type as category", () => {
    const [e] = segmentEvents(
      [{ message: { type: 'page', anonymousId: 'a', timestamp: 'T', sentAt: 'S1' }, bytes: 1, path: '' }],
      { sentAt: 'S0' },
    );
    expect(e).to.deep.include({ category: 'page', timestamp: 'T', sentAt: 'S1' });
    expect(one({ anonymousId: 'a' }, 'page')[0]!.payload.type).to.equal('page');
  });

  it("merges the batch's context and integrations under the message's own", () => {
    const [e] = segmentEvents(
      [
        {
          message: { type: 'identify', userId: 'u', context: { ip: '10.0.0.1', locale: 'fr' } },
          bytes: 1,
          path: '',
        },
      ],
      { context: { ip: '10.0.0.2', library: { name: 'batch-lib' } }, integrations: { All: false } },
    );
    expect(e!.payload.context).to.deep.equal({ ip: '10.0.0.1', locale: 'fr', library: { name: 'batch-lib' } });
    expect(e!.payload.integrations).to.deep.equal({ All: false });
    expect(e).to.deep.include({ clientIp: '10.0.0.1', library: 'batch-lib' });
  });

  it('refuses what Segment requires, naming each path', () => {
    const problems = (messages: unknown[]) => {
      try {
        segmentEvents(
          messages.map((message, i) => ({ message, bytes: 1, path: `/batch/${i}` })),
          {},
        );
      } catch (err) {
        expect((err as AppError).code).to.equal('VALIDATION_FAILED');
        return (err as AppError).details as { problems: { path: string }[]; invalid_events: number[] };
      }
      throw new Error('accepted');
    };
    const d = problems([
      { type: 'track', userId: 'u' },
      { type: 'identify' },
      { type: 'alias', anonymousId: 'a' },
      { type: 'group', userId: 'u' },
      { type: 'nope', userId: 'u' },
      'text',
      { type: 'track', event: 'fine', userId: 'u' },
    ]);
    expect(d.problems.map((p) => p.path)).to.deep.equal([
      '/batch/0/event',
      '/batch/1/userId',
      '/batch/2/previousId',
      '/batch/2/userId',
      '/batch/3/groupId',
      '/batch/4/type',
      '/batch/5',
    ]);
    expect(d.invalid_events).to.deep.equal([0, 1, 2, 3, 4, 5]);
    expect(codeOf(() => one({ type: 'page', userId: 'u' }, 'track'))).to.equal('VALIDATION_FAILED');
  });

  it('refuses a message over 32 KB as EVENT_TOO_LARGE, and takes one at exactly 32 KB', () => {
    const at = (bytes: number) =>
      segmentEvents([{ message: { type: 'track', event: 'e', userId: 'u' }, bytes, path: '/batch/0' }], {});
    expect(at(SEGMENT_LIMITS.maxMessageBytes)).to.have.length(1);
    expect(codeOf(() => at(SEGMENT_LIMITS.maxMessageBytes + 1))).to.equal('EVENT_TOO_LARGE');
  });
});
