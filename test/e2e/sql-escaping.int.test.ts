import { expect } from 'chai';
import { sqlString, type ClickHouseClient } from '@telemetry/platform';
import { adminClickHouse } from '../support/fixtures.js';

/** The escaping function against the real server: each string must come back unchanged. */
describe('sql escaping against real ClickHouse', () => {
  let ch: ClickHouseClient;
  before(() => {
    ch = adminClickHouse();
  });
  after(async () => {
    await ch.close();
  });

  const corpus = [
    '',
    "'",
    "''",
    '\\',
    "\\'",
    "x' OR '1'='1",
    "'; DROP TABLE checks; --",
    '-- comment',
    '/* block */',
    '#hash',
    'a\u0000b',
    'line\nbreak\r\ttab',
    '\u0001\u001f\u007f',
    'Grüße 🚀 日本語',
    '\u2019\u201c',
    '$1 {id:String} ?',
    'x'.repeat(20_000),
  ];

  it('round-trips every string in the corpus', async () => {
    for (const s of corpus) {
      const rs = await ch.query({ query: `SELECT ${sqlString(s)} AS v, length(v) AS n`, format: 'JSONEachRow' });
      const [row] = await rs.json<{ v: string; n: string }>();
      expect(row!.v, JSON.stringify(s.slice(0, 30))).to.equal(s);
      expect(Number(row!.n)).to.equal(Buffer.byteLength(s));
    }
  });
});
