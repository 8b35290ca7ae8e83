import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import {
  CHANNEL_TYPES,
  createChannelValidators,
  type ChannelType,
  type ConfigOf,
  type StateAlert,
} from '@telemetry/contract';
import { EgressPolicy, httpCall } from '@telemetry/platform';
import {
  CHANNELS,
  type Channel,
  type ChannelContext,
  type Notification,
  type NotifiedAlert,
  type Templates,
} from '@telemetry/alerting';
import { createAjv } from '../../libs/contract/src/ajv.js';
import { noMail, sampleAlert } from './support/fakes.js';

/**
 * Each chat channel's real send (the runner's HTTP client, bound to an egress policy that
 * allows loopback only) reaches a loopback recording server, and what arrives is checked
 * against the provider's published schema or one transcribed from its API reference
 * (test/fixtures/providers/<type>.json, each naming its source). No provider is contacted.
 */

/** Every channel type but the signed webhook, email and the paging services (each tested with its own module). */
type ChatType = Exclude<ChannelType, 'webhook' | 'email' | 'pagerduty' | 'opsgenie'>;
const NOT_CHAT: readonly ChannelType[] = ['webhook', 'email', 'pagerduty', 'opsgenie'];
const CHAT_TYPES = CHANNEL_TYPES.filter((t): t is ChatType => !NOT_CHAT.includes(t));

const NOW = Date.parse('2026-11-22T10:05:00Z');
const BOT_TOKEN = '123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
const NTFY_TOKEN = 'tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2';
const PUSHOVER_TOKEN = 'azGDORePK8gMaC0QOYAMyEEuzJnyUi';
const PUSHOVER_USER = 'uQiRzpo4DXghDmr9QzzfQu27cmVRsG';
const WEBHOOK_SECRET_PATH = '/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX';

interface Recorded {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/** The providers' schemas, the Adaptive Card's as Microsoft publishes it (draft-06, its own keywords). */
function providerSchemas(): ReturnType<typeof createAjv> {
  const base = createAjv([]);
  // NOTE: the Adaptive Card schema uses keywords of its own (`version`, `features`) that
  // ajv's strict mode refuses, and draft-06's `id`: a non-strict instance of the same ajv
  // reads it as is but for `id` → `$id` (draft-06 and draft-07 validate alike otherwise).
  const AjvClass = base.constructor as new (opts: object) => typeof base;
  const ajv = new AjvClass({ strict: false, allErrors: true, allowUnionTypes: true });
  ajv.addFormat('uri', true);
  ajv.addFormat('uri-reference', true);
  const card = JSON.parse(readFileSync('test/fixtures/providers/adaptive-card-1.4.json', 'utf8')) as Record<
    string,
    unknown
  >;
  const { $schema: _draft, id, ...rest } = card;
  ajv.addSchema({ ...rest, $id: String(id) });
  for (const t of CHAT_TYPES) {
    ajv.addSchema(JSON.parse(readFileSync(`test/fixtures/providers/${t}.json`, 'utf8')) as object);
  }
  return ajv;
}

function alertOf(k: number, type: StateAlert['type'] = 'monitor.down'): StateAlert {
  const n = String(k).padStart(2, '0');
  return {
    ...sampleAlert,
    id: `alr_0000000000000000000000${n}`,
    type,
    monitor_id: `mon_${n}`,
    incident_id: `chk_${n}`,
    monitor: { name: `shop-${n}`, url: `https://shop-${n}.example.test/` },
  };
}

function itemOf(alert: StateAlert, kind: NotifiedAlert['kind'] = 'down'): NotifiedAlert {
  return {
    kind,
    alert,
    monitorLink: `https://console.example.test/monitors/${alert.monitor_id}`,
    ...(kind === 'up'
      ? {}
      : { ackLink: (r: string) => `https://console.example.test/ack/${alert.incident_id}.${encodeURIComponent(r)}` }),
  };
}

function notification(items: NotifiedAlert[]): Notification {
  return { id: `ntf_${items.length}`, kind: items[0]!.kind, items, attempt: 1 };
}

describe('chat channel contracts (unit, a loopback recording server)', () => {
  let server: Server;
  let base: string;
  const received: Recorded[] = [];
  const replies: Reply[] = [];
  const validators = createChannelValidators();
  const ajv = providerSchemas();

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        const reply = replies.shift() ?? { status: 200, body: 'ok' };
        res.writeHead(reply.status, reply.headers ?? {});
        res.end(reply.body ?? '');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  beforeEach(() => {
    received.length = 0;
    replies.length = 0;
  });

  const policy = new EgressPolicy({ allow: ['127.0.0.1/32'] });
  const ctx: ChannelContext = {
    http: (call) => httpCall({ ...call, policy }),
    mail: noMail,
    userAgent: 'telemetry-check-runner/test',
    timeoutMs: 5000,
    signal: new AbortController().signal,
    now: () => NOW,
  };

  function configOf<T extends ChatType>(type: T): ConfigOf<T> {
    const configs: { [K in ChatType]: ConfigOf<K> } = {
      slack: { url: `${base}${WEBHOOK_SECRET_PATH}` },
      teams: { url: `${base}/workflows/abc123/triggers/manual/paths/invoke?api-version=1&sig=s3cretSig` },
      discord: { url: `${base}/api/webhooks/123456789012345678/s3cretDiscordToken` },
      google_chat: { url: `${base}/v1/spaces/AAAA/messages?key=s3cretKey&token=s3cretToken` },
      mattermost: { url: `${base}/hooks/xxxgeneratedkeyxxx`, channel: 'town-square', username: 'telemetry' },
      telegram: { bot_token: BOT_TOKEN, chat_id: '-1001234567890', api_url: base },
      ntfy: { server: base, topic: 'ops_alerts', token: NTFY_TOKEN },
      pushover: { token: PUSHOVER_TOKEN, user_key: PUSHOVER_USER, device: 'phone', api_url: base },
    };
    return configs[type] as ConfigOf<T>;
  }

  /** Where each provider is POSTed, and how its request authenticates (documented in each module). */
  const REQUEST: Record<ChatType, { path: string; contentType: string; auth?: string }> = {
    slack: { path: WEBHOOK_SECRET_PATH, contentType: 'application/json' },
    teams: {
      path: '/workflows/abc123/triggers/manual/paths/invoke?api-version=1&sig=s3cretSig',
      contentType: 'application/json',
    },
    discord: { path: '/api/webhooks/123456789012345678/s3cretDiscordToken', contentType: 'application/json' },
    google_chat: { path: '/v1/spaces/AAAA/messages?key=s3cretKey&token=s3cretToken', contentType: 'application/json' },
    mattermost: { path: '/hooks/xxxgeneratedkeyxxx', contentType: 'application/json' },
    telegram: { path: `/bot${BOT_TOKEN}/sendMessage`, contentType: 'application/json' },
    ntfy: { path: '/', contentType: 'application/json', auth: `Bearer ${NTFY_TOKEN}` },
    pushover: { path: '/1/messages.json', contentType: 'application/x-www-form-urlencoded' },
  };

  /** The secrets of each config: never shown, never in a queue's name. */
  const SECRETS: Record<ChatType, string[]> = {
    slack: [WEBHOOK_SECRET_PATH, 'XXXXXXXXXXXXXXXXXXXXXXXX'],
    teams: ['s3cretSig', 'abc123'],
    discord: ['s3cretDiscordToken'],
    google_chat: ['s3cretKey', 's3cretToken'],
    mattermost: ['xxxgeneratedkeyxxx'],
    telegram: [BOT_TOKEN, BOT_TOKEN.split(':')[1]!],
    ntfy: [NTFY_TOKEN],
    pushover: [PUSHOVER_TOKEN, PUSHOVER_USER],
  };

  function channelOf<T extends ChatType>(type: T): Channel<ConfigOf<T>> {
    return CHANNELS[type];
  }

  /** Renders and sends `n` as channel `type` named `ops`; the answer and what arrived. */
  async function deliver(
    type: ChatType,
    n: Notification,
    templates: Templates = {},
  ): Promise<{ answer: Awaited<ReturnType<Channel<unknown>['send']>>; req: Recorded; body: Record<string, unknown> }> {
    const channel = channelOf(type);
    const config = configOf(type);
    const rendered = channel.render(n, config, { templates, name: 'ops', now: NOW });
    const answer = await channel.send(rendered, config, ctx);
    expect(received, `${type}: one request`).to.have.length(1);
    const req = received[0]!;
    const body =
      REQUEST[type].contentType === 'application/json'
        ? (JSON.parse(req.body) as Record<string, unknown>)
        : Object.fromEntries(new URLSearchParams(req.body));
    return { answer, req, body };
  }

  function expectValid(type: ChatType, body: unknown): void {
    const validate = ajv.getSchema(`provider:${type}`)!;
    const ok = validate(body);
    expect(ok, `${type}: ${JSON.stringify(validate.errors?.slice(0, 5))}`).to.equal(true);
  }

  for (const type of CHAT_TYPES) {
    describe(type, () => {
      it('has a valid example config, groups, and does not page', () => {
        expect(channelOf(type).validate(configOf(type), validators)).to.deep.equal([]);
        expect(channelOf(type).groups).to.equal(true);
        expect(channelOf(type).paging).to.equal(false);
      });

      it('POSTs the provider’s documented request: path, headers and a body its schema accepts', async () => {
        const { answer, req, body } = await deliver(type, notification([itemOf(alertOf(1))]));
        expect(req.method).to.equal('POST');
        expect(req.path).to.equal(REQUEST[type].path);
        expect(req.headers['content-type']).to.equal(REQUEST[type].contentType);
        expect(req.headers['user-agent']).to.equal('telemetry-check-runner/test');
        expect(req.headers.authorization).to.equal(REQUEST[type].auth);
        expectValid(type, body);
        // The words name the monitor and the cause, and the acknowledge link names this channel.
        expect(JSON.stringify(body)).to.include('shop-01').and.to.include('connection refused');
        expect(decodeURIComponent(JSON.stringify(body))).to.include(
          `https://console.example.test/ack/chk_01.${type}:ops`,
        );
        expect(channelOf(type).classify(answer)).to.equal('delivered');
        if (type === 'pushover') expect(body).to.include({ token: PUSHOVER_TOKEN, user: PUSHOVER_USER });
      });

      it('sends twenty grouped incidents as one request within the provider’s limits, listing each', async () => {
        const items = Array.from({ length: 20 }, (_, k) => itemOf(alertOf(k + 1)));
        const { body } = await deliver(type, notification(items));
        expectValid(type, body);
        // Pushover's message is 1024 characters: the list is cut there (… marks it).
        const listed = type === 'pushover' ? 10 : 20;
        for (let k = 1; k <= listed; k++) expect(JSON.stringify(body)).to.include(`shop-${String(k).padStart(2, '0')}`);
        if (type === 'pushover') expect(body['message']).to.have.length.at.most(1024).and.to.match(/…$/);
      });

      it('never shows a secret, nor names its queue by one, nor renders one into the body', () => {
        const config = configOf(type);
        const shown = channelOf(type).shown(config);
        const endpoint = channelOf(type).endpoint(config);
        const rendered = JSON.stringify(
          channelOf(type).render(notification([itemOf(alertOf(1))]), config, { templates: {}, name: 'ops', now: NOW }),
        );
        for (const secret of SECRETS[type]) {
          expect(shown).not.to.include(secret);
          expect(endpoint).not.to.include(secret);
          expect(rendered).not.to.include(secret);
        }
        expect(shown).to.include('127.0.0.1');
      });

      it('waits as a 429’s Retry-After says, and gives a 400 up with the provider’s answer kept', async () => {
        replies.push({ status: 429, headers: { 'Retry-After': '2' }, body: '{}' });
        const limited = await deliver(type, notification([itemOf(alertOf(1))]));
        expect(limited.answer).to.include({ statusCode: 429, retryAfterMs: 2000 });
        expect(channelOf(type).classify(limited.answer)).to.equal('retry');
        received.length = 0;
        replies.push({ status: 400, body: 'invalid_payload' });
        const refused = await deliver(type, notification([itemOf(alertOf(1))]));
        expect(refused.answer).to.deep.equal({ statusCode: 400, response: 'invalid_payload' });
        expect(channelOf(type).classify(refused.answer)).to.equal('give_up');
      });
    });
  }

  it('every schema refuses what its provider refuses (so the checks above can fail)', () => {
    const refused: [ChatType, unknown][] = [
      ['slack', { text: 'x', blocks: [{ type: 'header', text: { type: 'plain_text', text: 'x'.repeat(151) } }] }],
      [
        'teams',
        {
          type: 'message',
          attachments: [
            {
              contentType: 'application/vnd.microsoft.card.adaptive',
              content: { type: 'AdaptiveCard', version: '1.4', body: [{ type: 'TextBlok', text: 'x' }] },
            },
          ],
        },
      ],
      ['discord', { content: 'x'.repeat(2001) }],
      ['google_chat', { txt: 'x' }],
      ['mattermost', { text: 'x', attachments: [{ color: 'red' }] }],
      ['telegram', { chat_id: '1', text: 'x'.repeat(4097) }],
      ['ntfy', { topic: 't', actions: [1, 2, 3, 4].map(() => ({ action: 'view', label: 'a', url: 'u' })) }],
      ['pushover', { token: PUSHOVER_TOKEN, user: PUSHOVER_USER, message: 'x'.repeat(1025) }],
    ];
    for (const [type, body] of refused) expect(ajv.getSchema(`provider:${type}`)!(body), type).to.equal(false);
  });

  it('a grouped message of 200 incidents with long names stays within every provider’s limits', async () => {
    const items = Array.from({ length: 200 }, (_, k) => {
      const a = alertOf(k % 100);
      return itemOf({
        ...a,
        monitor: { name: `${'long-name-'.repeat(20)}${k}`, url: `https://${'x'.repeat(200)}.test/` },
      });
    });
    for (const type of CHAT_TYPES) {
      received.length = 0;
      const { body } = await deliver(type, notification(items));
      expectValid(type, body);
    }
  });

  it('a template that renders nothing still sends what each provider accepts (the kind’s word stands in)', async () => {
    const empty = { title: '{{#grouped}}x{{/grouped}}', text: '{{#grouped}}x{{/grouped}}' };
    for (const type of CHAT_TYPES) {
      received.length = 0;
      const { body } = await deliver(type, notification([itemOf(alertOf(1))]), empty);
      expectValid(type, body);
      expect(JSON.stringify(body), type).to.include('DOWN');
    }
  });

  describe('provider specifics', () => {
    it('telegram: a 429 without Retry-After waits for the body’s parameters.retry_after', async () => {
      replies.push({
        status: 429,
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          ok: false,
          error_code: 429,
          description: 'Too Many Requests: retry after 2',
          parameters: { retry_after: 2 },
        }),
      });
      const { answer } = await deliver('telegram', notification([itemOf(alertOf(1))]));
      expect(answer).to.include({ statusCode: 429, retryAfterMs: 2000 });
      expect(CHANNELS.telegram.classify(answer)).to.equal('retry');
    });

    it('discord: a 429 without Retry-After waits for the body’s retry_after (seconds)', async () => {
      replies.push({
        status: 429,
        body: JSON.stringify({ message: 'You are being rate limited.', retry_after: 2.5, global: false }),
      });
      const { answer } = await deliver('discord', notification([itemOf(alertOf(1))]));
      expect(answer).to.include({ statusCode: 429, retryAfterMs: 2500 });
    });

    it('discord: a monitor named @everyone pings nobody', async () => {
      const alert = { ...alertOf(1), monitor: { name: '@everyone', url: 'https://a.example.test/' } };
      const { body } = await deliver('discord', notification([itemOf(alert)]));
      expect(body['allowed_mentions']).to.deep.equal({ parse: [] });
    });

    it('slack: a monitor’s name cannot mention a channel or forge a link (mrkdwn escaped)', async () => {
      const alert = {
        ...alertOf(1),
        monitor: { name: '<!channel> & <https://evil.test|x>', url: 'https://a.example.test/' },
      };
      const { body } = await deliver('slack', notification([itemOf(alert)]));
      // mrkdwn (the fallback text, sections, context) is parsed for mentions and links; plain_text (the header) is not.
      const blocks = body['blocks'] as { type: string; text?: { type: string; text: string } }[];
      const mrkdwn = [
        body['text'] as string,
        ...blocks.filter((b) => b.text?.type === 'mrkdwn').map((b) => b.text!.text),
      ];
      for (const text of mrkdwn) expect(text).not.to.include('<!channel>');
      expect(mrkdwn[1]).to.include('&lt;!channel&gt; &amp; &lt;https://evil.test|x&gt;');
    });

    it('telegram: HTML parse mode with the text escaped, previews off, an Acknowledge button', async () => {
      const alert = { ...alertOf(1), monitor: { name: 'a<b>&c', url: 'https://a.example.test/' } };
      const { body } = await deliver('telegram', notification([itemOf(alert)]));
      expect(body).to.deep.include({ parse_mode: 'HTML', link_preview_options: { is_disabled: true } });
      expect(body['text']).to.include('a&lt;b&gt;&amp;c').and.not.to.include('a<b>');
      expect((body['reply_markup'] as { inline_keyboard: { text: string }[][] }).inline_keyboard[0]![0]!.text).to.equal(
        'Acknowledge',
      );
    });

    it('ntfy: down at priority 4 with a view action to acknowledge; the config’s priority wins', async () => {
      const { body } = await deliver('ntfy', notification([itemOf(alertOf(1))]));
      expect(body).to.include({
        topic: 'ops_alerts',
        priority: 4,
        click: 'https://console.example.test/monitors/mon_01',
      });
      expect((body['actions'] as { action: string; label: string }[])[0]).to.include({
        action: 'view',
        label: 'Acknowledge',
      });
      received.length = 0;
      const c = { ...configOf('ntfy'), priority: 2 };
      await CHANNELS.ntfy.send(
        CHANNELS.ntfy.render(notification([itemOf(alertOf(1))]), c, { templates: {}, name: 'ops', now: NOW }),
        c,
        ctx,
      );
      expect((JSON.parse(received[0]!.body) as { priority: number }).priority).to.equal(2);
    });

    it('teams: an Adaptive Card with an Acknowledge Action.OpenUrl; a resolved incident has none', async () => {
      const down = await deliver('teams', notification([itemOf(alertOf(1))]));
      const card = (down.body['attachments'] as { content: { actions: { type: string; title: string }[] } }[])[0]!
        .content;
      expect(card.actions[0]).to.include({ type: 'Action.OpenUrl', title: 'Acknowledge' });
      received.length = 0;
      const up = await deliver('teams', notification([itemOf(alertOf(1, 'monitor.up'), 'up')]));
      expectValid('teams', up.body);
      expect(up.req.body).not.to.include('Acknowledge');
    });

    it('a channel’s own templates replace the words', () => {
      const channel = CHANNELS.google_chat;
      const c = configOf('google_chat');
      const r = channel.render(notification([itemOf(alertOf(1))]), c, {
        templates: { title: 'T {{monitor.name}}', text: 'X {{incident.cause}} {{ack_link}}' },
        name: 'ops',
        now: NOW,
      });
      expect(r).to.deep.equal({
        text: '*T shop-01*\nX connection refused https://console.example.test/ack/chk_01.google_chat%3Aops',
      });
    });
  });
});
