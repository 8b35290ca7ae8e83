import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import { createExpressApp, sendJsonPage, sendPage } from '@telemetry/platform';

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
        const [a, b] = await Promise.all([
          fetch(`${base}/a/old?limit=${limit}`),
          fetch(`${base}/b/old?limit=${limit}`),
        ]);
        const [ta, tb] = await Promise.all([a.text(), b.text()]);
        expect(tb, `limit ${limit}`).to.equal(ta);
        for (const h of ['etag', 'link', 'cache-control', 'content-type']) {
          expect(b.headers.get(h)?.replace('/b/', '/a/') ?? null, `${h}, limit ${limit}`).to.equal(a.headers.get(h));
        }
      }
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
