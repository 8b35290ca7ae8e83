import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Reader, type Response } from 'mmdb-lib';
import { defaultGeoIpFiles, PagedMmdb } from '@telemetry/stream-consumer';

/** A repeatable pseudo-random sequence (LCG), so a failure names the same addresses again. */
function addresses(seed: number, count: number, v6: boolean): string[] {
  let s = seed >>> 0;
  const next = (): number => (s = (Math.imul(s, 1103515245) + 12345) >>> 0);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    if (!v6) {
      const x = next();
      out.push(`${x >>> 24}.${(x >>> 16) & 255}.${(x >>> 8) & 255}.${x & 255}`);
    } else {
      // Mostly inside 2000::/3 (where the records are), some anywhere.
      const groups = Array.from({ length: 8 }, () => (next() >>> 16).toString(16));
      if (i % 4 !== 0) groups[0] = (0x2000 + (next() >>> 19)).toString(16);
      out.push(groups.join(':'));
    }
  }
  return out;
}

describe('PagedMmdb (GeoIP tree read page by page)', function () {
  this.timeout(60_000);
  const [ipv4File, ipv6File] = defaultGeoIpFiles() as [string, string];

  for (const [name, file, v6] of [
    ['IPv4', ipv4File, false],
    ['IPv6', ipv6File, true],
  ] as const) {
    it(`gives mmdb-lib's answer over the whole ${name} file for every address`, () => {
      const whole = new Reader<Response>(readFileSync(file));
      const paged = PagedMmdb.open(file);
      try {
        expect(paged.metadata).to.deep.equal(whole.metadata);
        const list = [
          ...addresses(v6 ? 7 : 3, 30_000, v6),
          ...(v6
            ? ['::1', '2001:4860:4860::8888', '2a00:1450:4001:81c::200e', '::']
            : ['8.8.8.8', '127.0.0.1', '0.0.0.0', '255.255.255.255']),
        ];
        for (const ip of list) expect(paged.get(ip), ip).to.deep.equal(whole.get(ip));
      } finally {
        paged.close();
      }
    });
  }

  it('reads the tree only where lookups go, and each page once', () => {
    const paged = PagedMmdb.open(ipv4File);
    try {
      const atStart = paged.stats();
      // At start: the records and metadata (after the tree), not the tree.
      expect(atStart.bytesRead).to.be.below(atStart.fileBytes - paged.metadata.searchTreeSize + 2 * PagedMmdb.PAGE);
      expect(paged.get('8.8.8.8')).to.deep.include({ country_code: 'US' });
      const one = paged.stats().pagesRead - atStart.pagesRead;
      // One walk of at most 32 nodes: at most one page per node.
      expect(one).to.be.within(1, 32);
      paged.get('8.8.8.8');
      expect(paged.stats().pagesRead - atStart.pagesRead).to.equal(one);
    } finally {
      paged.close();
    }
  });

  it('refuses a file that is not an MMDB database, and one too short', () => {
    const junk = join(tmpdir(), `paged-not-a-db-${process.pid}.mmdb`);
    writeFileSync(junk, Buffer.alloc(300_000, 7));
    expect(() => PagedMmdb.open(junk)).to.throw();
    writeFileSync(junk, 'x');
    expect(() => PagedMmdb.open(junk)).to.throw();
  });
});
