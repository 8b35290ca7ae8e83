import type { Server } from 'node:http';
import { expect } from 'chai';
import { createExpressApp, errorHandler } from '@telemetry/platform';
import { LOCAL_LAYOUT } from '@telemetry/store';
import { screenshotRoute } from '../../services/query-service/src/screenshots.route.js';
import { silentLogger } from './support/fakes.js';

/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

/**
 * The screenshot route (screenshots.route.ts) over a fake ClickHouse reader and tail: a
 * check the history already shows with a screenshot (served from the tail, read from
 * Kafka) whose PNG the consumer has not stored yet is waited for, not answered 404; any
 * other miss is 404 at once.
 */
describe('screenshot route: a screenshot announced but not yet stored (unit, fake reader)', () => {
  let server: Server;
  let base = '';
  let storedAfterReads = Infinity;
  let reads = 0;
  const announced = new Set<string>();

  before(async () => {
    const app = createExpressApp();
    app.use((_req, res, next) => {
      res.locals.key = { tenantId: 'ten_a', monitorIds: new Set() };
      next();
    });
    const reader = {
      query: () => {
        reads++;
        return Promise.resolve({ data: reads > storedAfterReads ? [{ png_base64: PNG.toString('base64') }] : [] });
      },
    };
    app.get(
      '/api/monitors/:id/checks/:checkId/screenshot',
      screenshotRoute({
        reader: reader as never,
        database: 'telemetry',
        layout: LOCAL_LAYOUT,
        logger: silentLogger,
        queryTimeoutMs: 5000,
        tail: { announcesScreenshot: (t, m, c) => announced.has(`${t}/${m}/${c}`) },
      }),
    );
    app.use(errorHandler(silentLogger));
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    reads = 0;
    announced.clear();
  });

  it('waits for the PNG of a check the tail announces, and serves it once stored', async () => {
    announced.add('ten_a/mon_1/chk_1');
    storedAfterReads = 3;
    const res = await fetch(`${base}/api/monitors/mon_1/checks/chk_1/screenshot`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('image/png');
    expect(Buffer.from(await res.arrayBuffer()).equals(PNG)).to.equal(true);
    expect(reads).to.equal(4);
  });

  it('answers 404 SCREENSHOT_NOT_FOUND at once for a check nothing announces', async () => {
    storedAfterReads = Infinity;
    const res = await fetch(`${base}/api/monitors/mon_1/checks/chk_2/screenshot`);
    expect(res.status).to.equal(404);
    expect(((await res.json()) as { code: string }).code).to.equal('SCREENSHOT_NOT_FOUND');
    expect(reads).to.equal(1);
  });

  it('does not answer for another tenant’s announcement', async () => {
    announced.add('ten_b/mon_1/chk_3');
    storedAfterReads = Infinity;
    const res = await fetch(`${base}/api/monitors/mon_1/checks/chk_3/screenshot`);
    expect(res.status).to.equal(404);
    expect(reads).to.equal(1);
  });
});
