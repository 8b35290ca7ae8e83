import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { AppError } from '@telemetry/platform';
import {
  decodePosthogBody,
  posthogBatch,
  posthogCompatEvent,
  posthogErrorBody,
  posthogIdentity,
} from '@telemetry/ingest-gateway';

const limits = { maxBytes: 64 * 1024, maxRatio: 50 };
const codeOf = (f: () => unknown): string => {
  try {
    f();
  } catch (err) {
    return (err as AppError).code;
  }
  return 'no error';
};

describe('posthog identity, decoding and mapping (unit, pure)', () => {
  describe('identity: distinct_id becomes anonymous_id or user_id', () => {
    it('posthog-js, anonymous: the distinct id is the anonymous id', () => {
      const p = { distinct_id: 'anon-1', $device_id: 'anon-1', $is_identified: false, $process_person_profile: true };
      expect(posthogIdentity({ event: '$pageview', properties: p })).to.deep.equal({ anonymousId: 'anon-1' });
    });
    it('posthog-js, $identify: the user id, and the anonymous id it merges', () => {
      const p = { distinct_id: 'user-7', $anon_distinct_id: 'anon-1', $device_id: 'anon-1', $is_identified: true };
      expect(posthogIdentity({ event: '$identify', properties: p })).to.deep.equal({
        userId: 'user-7',
        anonymousId: 'anon-1',
      });
    });
    it('posthog-js, identified later: the user id and the device id (the first anonymous id)', () => {
      const p = { distinct_id: 'user-7', $device_id: 'anon-1', $user_id: 'user-7', $is_identified: true };
      expect(posthogIdentity({ event: 'clicked', properties: p })).to.deep.equal({
        userId: 'user-7',
        anonymousId: 'anon-1',
      });
    });
    it('posthog-js with person_profiles always, not yet identified: still anonymous', () => {
      const p = { distinct_id: 'anon-2', $device_id: 'anon-2', $is_identified: false, $process_person_profile: true };
      expect(posthogIdentity({ event: 'x', properties: p })).to.deep.equal({ anonymousId: 'anon-2' });
    });
    it("server SDKs: the server's distinct id is the user; $anon_distinct_id when given", () => {
      expect(
        posthogIdentity({ event: 'x', distinct_id: 'user-1', properties: { $lib: 'posthog-node' } }),
      ).to.deep.equal({
        userId: 'user-1',
        anonymousId: undefined,
      });
      expect(
        posthogIdentity({ event: '$identify', distinct_id: 'user-1', properties: { $anon_distinct_id: 'a-9' } }),
      ).to.deep.equal({ userId: 'user-1', anonymousId: 'a-9' });
      expect(posthogIdentity({ event: 'x', distinct_id: 42, properties: {} })).to.deep.equal({
        userId: 42,
        anonymousId: undefined,
      });
    });
    it('server SDKs, a personless event (the SDK made the id up): anonymous', () => {
      const e = {
        event: 'x',
        distinct_id: 'f3b2c1',
        properties: { $process_person_profile: false, $lib: 'posthog-python' },
      };
      expect(posthogIdentity(e)).to.deep.equal({ anonymousId: 'f3b2c1' });
    });
  });

  describe('decoding', () => {
    const ev = { event: 'x', properties: { token: 't' } };
    it('gzip by its magic bytes, whatever the headers say', () => {
      expect(decodePosthogBody(gzipSync(JSON.stringify(ev)), 'text/plain', undefined, limits)).to.deep.equal(ev);
    });
    it('a gzip bomb is refused by the ratio cap', () => {
      const bomb = gzipSync(Buffer.alloc(60 * 1024, 32));
      expect(codeOf(() => decodePosthogBody(bomb, 'text/plain', undefined, limits))).to.equal('PAYLOAD_TOO_LARGE');
    });
    it('the data= form: JSON, base64, and base64 whose + a form turned into spaces', () => {
      const b64 = Buffer.from(JSON.stringify([ev, { event: 'é?>>' }])).toString('base64');
      expect(b64).to.include('+');
      const form = 'application/x-www-form-urlencoded';
      expect(decodePosthogBody(Buffer.from(`data=${b64}`), form, undefined, limits)).to.deep.equal([
        ev,
        { event: 'é?>>' },
      ]);
      expect(
        decodePosthogBody(Buffer.from(`data=${encodeURIComponent(JSON.stringify(ev))}`), form, undefined, limits),
      ).to.deep.equal(ev);
      expect(codeOf(() => decodePosthogBody(Buffer.from('other=1'), form, undefined, limits))).to.equal(
        'VALIDATION_FAILED',
      );
      expect(codeOf(() => decodePosthogBody(Buffer.from('data=%%%'), form, 'base64', limits))).to.equal('INVALID_JSON');
    });
    it('the JSON depth limit applies', () => {
      const deep = '['.repeat(40) + ']'.repeat(40);
      expect(codeOf(() => decodePosthogBody(Buffer.from(deep), 'application/json', undefined, limits))).to.equal(
        'VALIDATION_FAILED',
      );
    });
  });

  describe('the batch and its key', () => {
    it('collects api_key and token from everywhere; two different ones are refused', () => {
      expect(posthogBatch({ api_key: 'k', batch: [{ event: 'x', properties: { token: 'k' } }] }, 10).key).to.equal('k');
      expect(posthogBatch([{ event: 'x', api_key: 'k' }], 10).key).to.equal('k');
      expect(posthogBatch({ event: 'x', token: 'k' }, 10).key).to.equal('k');
      expect(
        codeOf(() => posthogBatch({ api_key: 'k', batch: [{ event: 'x', properties: { token: 'j' } }] }, 10)),
      ).to.equal('INVALID_CREDENTIALS');
      expect(
        codeOf(() =>
          posthogBatch(
            [
              { event: 'a', token: 'k' },
              { event: 'b', api_key: 'j' },
            ],
            10,
          ),
        ),
      ).to.equal('INVALID_CREDENTIALS');
    });
    it('refuses a batch that is not an array, empty, too long, or with a non-object event', () => {
      expect(codeOf(() => posthogBatch({ batch: {} }, 10))).to.equal('VALIDATION_FAILED');
      expect(codeOf(() => posthogBatch([], 10))).to.equal('VALIDATION_FAILED');
      expect(codeOf(() => posthogBatch([{}, {}, {}], 2))).to.equal('BATCH_TOO_LARGE');
      expect(codeOf(() => posthogBatch(['x'], 10))).to.equal('VALIDATION_FAILED');
      expect(codeOf(() => posthogBatch('x', 10))).to.equal('VALIDATION_FAILED');
    });
  });

  describe('one event as a CompatEvent', () => {
    it('the event sent_at wins over the batch one, which wins over the query time; the token leaves the payload', () => {
      const e = {
        event: 'x',
        uuid: 'u1',
        api_key: 'k',
        properties: { token: 'k', a: 1 },
        sent_at: '2026-01-01T00:00:02Z',
      };
      const c = posthogCompatEvent(e, '2026-01-01T00:00:01Z', '2026-01-01T00:00:00.000Z', 0);
      expect(c).to.include({ sentAt: '2026-01-01T00:00:02Z', clientId: 'u1', category: 'x', protocol: 'posthog' });
      expect(c.payload).to.deep.equal({
        event: 'x',
        uuid: 'u1',
        properties: { a: 1 },
        sent_at: '2026-01-01T00:00:02Z',
      });
      expect(posthogCompatEvent({ event: 'x' }, undefined, '2026-01-01T00:00:00.000Z', 0).sentAt).to.equal(
        '2026-01-01T00:00:00.000Z',
      );
    });
    it('offset without a send time counts back from the time of receipt', () => {
      const c = posthogCompatEvent(
        { event: 'x', offset: 250 },
        undefined,
        undefined,
        Date.parse('2026-01-01T00:00:01Z'),
      );
      expect(c.timestamp).to.equal('2026-01-01T00:00:00.750Z');
    });
  });

  it("errors: PostHog's body, our code, the first problem's path renamed as the client names it", () => {
    const err = new AppError('VALIDATION_FAILED', 'bad', { problems: [{ path: '/batch/2/sentAt', message: 'm' }] });
    expect(posthogErrorBody(err)).to.deep.equal({
      type: 'validation_error',
      code: 'VALIDATION_FAILED',
      detail: 'bad',
      attr: '/batch/2/sent_at',
    });
    const internal = new AppError('INTERNAL_ERROR', 'secret detail', undefined, {}, false);
    expect(posthogErrorBody(internal)).to.include({ type: 'server_error', detail: 'internal error', attr: null });
  });
});
