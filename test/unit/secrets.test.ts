import { expect } from 'chai';
import { newSealingKeyText, parseSealingKeys, SecretBox } from '@telemetry/platform';
import {
  DEFAULT_MONITOR,
  MASK,
  maskUrl,
  maskWebhookUrl,
  publicMonitor,
  unmaskPatch,
  type StoredMonitor,
} from '@telemetry/store';

const stored: StoredMonitor = {
  ...DEFAULT_MONITOR,
  tenant_id: 'ten_a',
  key: null,
  id: 'mon_a',
  name: 'a',
  url: 'https://bob:hunter2@example.test/x?y=1',
  headers: { Authorization: 'Bearer s3cret', 'X-Api-Key': 'k-123' },
  webhook_secret: 'whsec_abc',
  created_at: '2026-11-22T00:00:00Z',
  updated_at: '2026-11-22T00:00:00Z',
  version: 1,
};

describe('secrets at rest and in answers (unit)', () => {
  it('seals with the first key, opens with any key of the ring, and only in its own context', () => {
    const old = newSealingKeyText('old');
    const next = newSealingKeyText('new');
    const sealedOld = new SecretBox(parseSealingKeys(old)).seal('plain', 'monitors/ten_a/mon_a');
    const ring = new SecretBox(parseSealingKeys(`${next},${old}`));
    expect(ring.open(sealedOld, 'monitors/ten_a/mon_a')).to.equal('plain');
    const sealedNew = ring.seal('plain', 'monitors/ten_a/mon_a');
    expect(sealedNew).to.not.include('plain');
    expect(sealedNew.startsWith('v1.new.'), 'sealed with the first key').to.equal(true);
    expect(() => ring.open(sealedNew, 'monitors/ten_b/mon_a'), 'another context').to.throw();
    const tampered = sealedNew.slice(0, -2) + (sealedNew.endsWith('A') ? 'BB' : 'AA');
    expect(() => ring.open(tampered, 'monitors/ten_a/mon_a'), 'tampered').to.throw();
    expect(() => new SecretBox(parseSealingKeys(old)).open(sealedNew, 'monitors/ten_a/mon_a'), 'retired key').to.throw(
      /does not hold/,
    );
  });

  it('refuses malformed key rings without echoing a key', () => {
    for (const bad of ['', 'k1', 'k1:c2hvcnQ=', 'bad id:' + Buffer.alloc(32).toString('base64')]) {
      expect(() => parseSealingKeys(bad), bad).to.throw();
    }
    const dup = `${newSealingKeyText('k')},${newSealingKeyText('k')}`;
    expect(() => parseSealingKeys(dup)).to.throw(/differ/);
    try {
      parseSealingKeys('k1:c2hvcnQ=');
    } catch (err) {
      expect(String(err)).to.not.include('c2hvcnQ');
    }
  });

  it('shows no header value, URL userinfo, query value or webhook path, and the webhook secret only when asked', () => {
    const shown = publicMonitor({
      ...stored,
      url: 'https://tok123@example.test/x?y=1&key=k-456&flag&empty=',
      webhooks: [
        'https://hooks.chat.example.test/services/T0/B0/slacksecret',
        'https://hooks.chat.example.test/services/T1/B1/other',
        'https://bot-api.example.test/bot123:telegramsecret/sendMessage?chat_id=1',
      ],
    });
    expect(shown.headers).to.deep.equal({ Authorization: MASK, 'X-Api-Key': MASK });
    expect(shown.url).to.equal('https://example.test/x?y=****&key=****&****&empty=');
    expect(shown.webhooks, 'scheme and host, each once').to.deep.equal([
      'https://hooks.chat.example.test',
      'https://bot-api.example.test',
    ]);
    expect(shown).to.not.have.property('webhook_secret');
    expect(JSON.stringify(shown)).to.not.match(/s3cret|k-123|tok123|k-456|slacksecret|telegramsecret|whsec_abc/);
    expect(publicMonitor(stored, {}, true).webhook_secret).to.equal('whsec_abc');
    expect(publicMonitor(stored).url).to.equal('https://example.test/x?y=****');
    expect(maskUrl('https://example.test/')).to.equal('https://example.test/');
    expect(maskUrl('tcp://db.example.test:5432'), 'other types as sent').to.equal('tcp://db.example.test:5432');
    // A stored URL the parser refuses is never shown raw: no userinfo, no query.
    expect(maskUrl('http://tok:pw@1.2.3.4.5/x?key=sec')).to.equal('http://1.2.3.4.5/x');
    expect(maskWebhookUrl('http://127.0.0.1:8080/discord/123/abc')).to.equal('http://127.0.0.1:8080');
  });

  it('names the stored secrets a change to a type whose URL the server sets leaves behind', () => {
    // An http monitor made heartbeat: its URL becomes heartbeat://<id>, its headers go.
    const { patch, dropped } = unmaskPatch(stored, { type: 'heartbeat' });
    expect(dropped).to.deep.equal(['url.userinfo', 'url.query.y', 'headers.Authorization', 'headers.X-Api-Key']);
    expect(patch.headers).to.deep.equal({});
    // Another type with a URL of its own: as any URL change.
    expect(unmaskPatch(stored, { type: 'tcp', url: 'tcp://example.test:25' }).dropped).to.deep.equal([
      'url.userinfo',
      'headers.Authorization',
      'headers.X-Api-Key',
    ]);
    expect(unmaskPatch({ ...stored, type: 'heartbeat' }, { type: 'heartbeat' }).dropped).to.deep.equal([]);
  });

  it('keeps a stored secret when a PATCH sends back its mask, and replaces it otherwise', () => {
    const { patch, dropped } = unmaskPatch(stored, {
      url: 'https://example.test/x?y=****',
      headers: { authorization: MASK, 'X-New': 'v' },
    });
    expect(patch.url).to.equal(stored.url);
    expect(patch.headers).to.deep.equal({ authorization: 'Bearer s3cret', 'X-New': 'v' });
    expect(dropped).to.deep.equal([]);
    expect(
      unmaskPatch(stored, { headers: { 'X-Other': MASK } }).patch.headers,
      'no such header: as sent',
    ).to.deep.equal({ 'X-Other': MASK });
    const hooks = {
      ...stored,
      webhooks: ['https://hooks.chat.example.test/a/secret', 'https://hooks.chat.example.test/b/secret'],
    };
    expect(
      unmaskPatch(hooks, { webhooks: ['https://hooks.chat.example.test', 'https://new.example.test/h'] }).patch
        .webhooks,
    ).to.deep.equal([...hooks.webhooks, 'https://new.example.test/h']);
    const bare = {
      ...stored,
      webhooks: ['https://hooks.chat.example.test', 'https://hooks.chat.example.test/a/secret'],
    };
    expect(
      unmaskPatch(bare, { webhooks: ['https://hooks.chat.example.test'] }).patch.webhooks,
      'one shown as it is',
    ).to.deep.equal(bare.webhooks);
    expect(unmaskPatch(hooks, { webhooks: ['https://hooks.chat.example.test/a/secret'] }).patch.webhooks).to.deep.equal(
      ['https://hooks.chat.example.test/a/secret'],
    );
  });

  it('keeps the URL credentials within the origin: a new path keeps userinfo and masked query values', () => {
    const { patch, dropped } = unmaskPatch(stored, { url: 'https://example.test/other?y=****&z=2' });
    expect(patch.url).to.equal('https://bob:hunter2@example.test/other?y=1&z=2');
    expect(patch.headers, 'headers untouched').to.equal(undefined);
    expect(dropped).to.deep.equal([]);
    expect(unmaskPatch(stored, { url: 'https://@example.test/x' }).patch.url, 'an empty userinfo removes it').to.equal(
      'https://@example.test/x',
    );
    expect(unmaskPatch(stored, { url: 'https://bob:****@example.test/z' }).patch.url, 'the older mask').to.equal(
      'https://bob:hunter2@example.test/z',
    );
    expect(unmaskPatch(stored, { url: 'https://bob:****@other.test/z' }).dropped).to.deep.equal([
      'url.userinfo',
      'headers.Authorization',
      'headers.X-Api-Key',
    ]);
    expect(unmaskPatch(stored, { url: 'https://eve:pw@example.test/x' }).patch.url, 'new userinfo').to.equal(
      'https://eve:pw@example.test/x',
    );
  });

  it('drops the stored header values and URL credentials when the URL moves to another origin, and says which', () => {
    const moved = unmaskPatch(stored, { url: 'https://other.test/x?y=****' });
    expect(moved.patch.url).to.equal('https://other.test/x');
    expect(moved.patch.headers).to.deep.equal({});
    expect(moved.dropped.sort()).to.deep.equal([
      'headers.Authorization',
      'headers.X-Api-Key',
      'url.query.y',
      'url.userinfo',
    ]);
    // Another port or scheme is another origin too; headers sent again go along.
    const port = unmaskPatch(stored, {
      url: 'https://example.test:8443/x',
      headers: { Authorization: 'Bearer new', 'X-Api-Key': MASK },
    });
    expect(port.patch.headers).to.deep.equal({ Authorization: 'Bearer new' });
    expect(port.dropped.sort()).to.deep.equal(['headers.X-Api-Key', 'url.userinfo']);
    expect(unmaskPatch(stored, { url: 'http://example.test/x' }).dropped).to.include('url.userinfo');
    // The default port is the same origin.
    expect(unmaskPatch(stored, { url: 'https://example.test:443/z' }).dropped).to.deep.equal([]);
  });
});
