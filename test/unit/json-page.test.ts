import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import { createExpressApp, preparePage, sendJsonPage, sendPage, sendPreparedPage } from '@telemetry/platform';

/**
 * sendJsonPage writes a page from items already serialized: its answer (body, ETag,
 * Link, Cache-Control) must be byte for byte sendPage's of the same objects.
 */
describe('sendJsonPage: the same answer as sendPage', () => {
  const items = [
    { t: 3, id: 'c3', check: { id: 'c3', error: null, detail: 'say "hi" \u2028', timings: { steps: [1, 2] } } },
    { t: 2, id: 'c2', check: { id: 'c2', error: 'timeout', detail: null, timings: null } },
    { t: 1, id: 'c1', check: { id: 'c1', error: null, detail: null, timings: null } },
  ];
  const rows = items.map((r) => ({ ...r, json: JSON.stringify(r.check) }));

  it('answers each page size, with and without a next page, as sendPage does', async () => {
    const app = createExpressApp();
    app.get('/a/old', (req, res) => {
      const limit = Number(req.query['limit']);
      sendPage(
        req,
        res,
        rows.slice(0, limit + 1),
        limit,
        (r) => [r.t, r.id],
        (r) => r.check,
        'private, no-cache',
      );
    });
    app.get('/c/old', (req, res) => {
      const limit = Number(req.query['limit']);
      const page = preparePage(
        rows.slice(0, limit + 1),
        limit,
        (r) => [r.t, r.id],
        (r) => r.check,
      );
      sendPreparedPage(req, res, page, 'private, no-cache');
    });
    app.get('/b/old', (req, res) => {
      const limit = Number(req.query['limit']);
      sendJsonPage(
        req,
        res,
        rows.slice(0, limit + 1),
        limit,
        (r) => [r.t, r.id],
        (r) => r.json,
        'private, no-cache',
      );
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (const limit of [0, 1, 2, 3, 5]) {
        const [a, b, c] = await Promise.all([
          fetch(`${base}/a/old?limit=${limit}`),
          fetch(`${base}/b/old?limit=${limit}`),
          fetch(`${base}/c/old?limit=${limit}`),
        ]);
        const [ta, tb, tc] = await Promise.all([a.text(), b.text(), c.text()]);
        expect(tb, `limit ${limit}`).to.equal(ta);
        expect(tc, `prepared, limit ${limit}`).to.equal(ta);
        for (const h of ['etag', 'link', 'cache-control', 'content-type', 'vary']) {
          expect(b.headers.get(h)?.replace('/b/', '/a/') ?? null, `${h}, limit ${limit}`).to.equal(a.headers.get(h));
          expect(c.headers.get(h)?.replace('/c/', '/a/') ?? null, `prepared ${h}, limit ${limit}`).to.equal(
            a.headers.get(h),
          );
        }
        // A conditional request: 304 with the same ETag.
        const etag = a.headers.get('etag')!;
        const [na, nc] = await Promise.all([
          fetch(`${base}/a/old?limit=${limit}`, { headers: { 'if-none-match': etag } }),
          fetch(`${base}/c/old?limit=${limit}`, { headers: { 'if-none-match': etag } }),
        ]);
        expect([nc.status, await nc.text()]).to.deep.equal([na.status, await na.text()]);
      }
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
