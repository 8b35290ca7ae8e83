import { expect } from 'chai';
import { parseFeed } from '@rowanmanning/feed-parser';
import { XMLValidator } from 'fast-xml-parser';
import type { StoredStatusPage } from '@telemetry/store';
import { feedEntryId, pageFeed } from '../../services/query-service/src/status/feeds.route.js';
import {
  badgeSvg,
  responseTimeFace,
  statusFace,
  unknownFace,
  uptimeFace,
} from '../../services/query-service/src/status/badges.route.js';
import { plainText } from '../../services/query-service/src/status/public-answers.js';

const page: StoredStatusPage = {
  slug: 'shop',
  tenant_id: 't',
  title: 'Shop\u0007 & Co',
  description: null,
  monitor_ids: ['m'],
  key: null,
  created_at: '2026-11-01T00:00:00Z',
  updated_at: '2026-11-02T00:00:00Z',
  version: 1,
};

describe('status page feeds and badges (units)', () => {
  it('makes text XML-safe, and escaped where readers take HTML', () => {
    expect(plainText('a\u0000b\ud800c\u0009')).to.equal('a\ufffdb\ufffdc\u0009');
    expect(plainText(`<b>"x" & 'y'</b>`, true)).to.equal('&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;');
  });

  it('renders a feed of no entries dated by the page, and entries by their notices, valid and stable', () => {
    const empty = pageFeed(page, [], 'https://status.example.test/');
    const parsed = parseFeed(empty.atom1());
    expect(parsed.updated?.toISOString()).to.equal('2026-11-02T00:00:00.000Z');
    expect(parsed.title).to.equal('Shop\ufffd & Co');
    const entries = [
      {
        noticeId: 'ntc_b',
        kind: 'report_updated',
        title: 'T ]]> <x>',
        body: 'B\u0001',
        createdAtMs: 2000,
        reportId: 'rpt_1',
      },
      { noticeId: 'ntc_a', kind: 'maintenance_started', title: 'M', body: 'N', createdAtMs: 1000, reportId: null },
    ] as const;
    const feed = pageFeed(page, entries, 'https://status.example.test');
    for (const xml of [feed.rss2(), feed.atom1()]) {
      expect(XMLValidator.validate(xml)).to.equal(true);
      const f = parseFeed(xml);
      expect(f.items.map((i) => [i.id, i.title, i.description, i.url])).to.deep.equal([
        [feedEntryId('ntc_b'), 'T ]]> <x>', 'B\ufffd', 'https://status.example.test/status/shop/history#rpt_1'],
        [feedEntryId('ntc_a'), 'M', 'N', 'https://status.example.test/status/shop'],
      ]);
    }
    expect(pageFeed(page, entries, 'https://status.example.test').atom1()).to.equal(feed.atom1());
  });

  it('colours badges by value, and renders each as valid SVG', () => {
    expect(statusFace('up')).to.deep.equal({ label: 'status', message: 'up', color: 'brightgreen' });
    expect(statusFace('down').color).to.equal('red');
    expect(statusFace('paused').color).to.equal('lightgrey');
    expect(statusFace('pending').color).to.equal('yellow');
    const uptime = [100, 99.9, 99.5, 98, 96, 91, 50].map((p) => uptimeFace('7d', p).color);
    expect(uptime).to.deep.equal(['brightgreen', 'brightgreen', 'green', 'yellowgreen', 'yellow', 'orange', 'red']);
    expect(uptimeFace('24h', 99.95)).to.deep.equal({ label: 'uptime 24h', message: '99.95%', color: 'brightgreen' });
    expect(uptimeFace('30d', null)).to.deep.equal({ label: 'uptime 30d', message: 'no data', color: 'lightgrey' });
    const rt = [120, 400, 900, 1500, 2500].map((ms) => responseTimeFace(ms).color);
    expect(rt).to.deep.equal(['brightgreen', 'green', 'yellow', 'orange', 'red']);
    expect(responseTimeFace(119.6).message).to.equal('120 ms');
    expect(unknownFace('uptime', '24h')).to.deep.equal({ label: 'uptime 24h', message: 'unknown', color: 'lightgrey' });
    const svg = badgeSvg(uptimeFace('30d', 99.95));
    expect(XMLValidator.validate(svg)).to.equal(true);
    expect(svg).to.contain('<title>uptime 30d: 99.95%</title>');
  });
});
