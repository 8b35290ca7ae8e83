import { expect } from 'chai';
import { NOTIFICATION_KINDS, TEMPLATE_VARIABLES, type NotificationKind, type StateAlert } from '@telemetry/contract';
import {
  DEFAULT_TEMPLATES,
  messageView,
  renderMessage,
  renderTemplate,
  templateProblems,
  type Notification,
  type NotifiedAlert,
} from '@telemetry/alerting';
import { sampleAlert } from './support/fakes.js';

/** Message templates (docs/alerting.md, "Templates"): the rules a saved template is held to, and the defaults' words. */

const NOW = Date.parse('2026-11-22T10:05:30Z');
const ACK = 'https://console.example.test/ack/tok';

function item(kind: NotificationKind, alert: StateAlert = sampleAlert): NotifiedAlert {
  return {
    kind,
    alert,
    monitorLink: 'https://console.example.test/monitors/mon_a',
    ...(kind === 'escalation' ? { step: 2 } : {}),
    ...(kind === 'reminder' ? { reminder: 3 } : {}),
    ...(kind === 'acknowledged' ? { acknowledged_by: 'email:ops@example.test' } : {}),
    ...(kind === 'up' ? {} : { ackLink: (r: string) => `${ACK}?for=${r}` }),
  };
}

function notification(items: NotifiedAlert[]): Notification {
  return { id: 'ntf_1', kind: items[0]!.kind, items, attempt: 1 };
}

const upAlert: StateAlert = {
  ...sampleAlert,
  id: 'alr_000000000000000000000002',
  type: 'monitor.up',
  created_at: '2026-11-22T10:04:00.000Z',
  check: { ...sampleAlert.check, status: 'up', status_code: 200, error: undefined },
};

describe('message templates (unit)', () => {
  describe('templateProblems', () => {
    it('reports a syntax error at the field’s path', () => {
      const problems = templateProblems('{{#alerts}}unclosed', '/templates/text');
      expect(problems).to.have.length(1);
      expect(problems[0]!.path).to.equal('/templates/text');
      expect(problems[0]!.message).to.match(/^does not parse: /);
    });

    it('reports an unknown variable, at top level and inside alerts, once each', () => {
      expect(templateProblems('{{monitor.nam}} {{monitor.nam}}', '/t')).to.deep.equal([
        { path: '/t', message: 'unknown variable {{monitor.nam}}' },
      ]);
      expect(templateProblems('{{#alerts}}{{nope}}{{/alerts}}', '/t')).to.deep.equal([
        { path: '/t', message: 'unknown variable {{nope}}' },
      ]);
      expect(templateProblems('{{#process}}x{{/process}}', '/t')).to.deep.equal([
        { path: '/t', message: 'unknown variable {{process}}' },
      ]);
    });

    it('refuses unescaped output (a value could break the JSON or HTML it is put in)', () => {
      for (const t of ['{{{monitor.name}}}', '{{& monitor.name}}']) {
        expect(templateProblems(t, '/templates/text').map((p) => p.message)[0]).to.match(
          /^unescaped output is not allowed/,
        );
      }
    });

    it('refuses partials (no other template is ever read)', () => {
      expect(templateProblems('{{> header}}', '/t')).to.deep.equal([
        { path: '/t', message: 'partials are not allowed ({{> header}})' },
      ]);
    });

    it('accepts each item’s variables inside {{#alerts}}…{{/alerts}}', () => {
      expect(templateProblems('{{#alerts}}{{monitor.name}}{{/alerts}}', '/t')).to.deep.equal([]);
      expect(templateProblems('{{#alerts}}{{title}}: {{incident.cause}} {{ack_link}}{{/alerts}}', '/t')).to.deep.equal(
        [],
      );
    });

    it('accepts every documented variable, as a value, a section and an inverted section', () => {
      for (const v of TEMPLATE_VARIABLES) {
        expect(templateProblems(`{{${v}}} {{#${v}}}x{{/${v}}} {{^${v}}}y{{/${v}}}`, '/t'), v).to.deep.equal([]);
      }
    });

    it('accepts the default templates', () => {
      expect(templateProblems(DEFAULT_TEMPLATES.title, '/t')).to.deep.equal([]);
      expect(templateProblems(DEFAULT_TEMPLATES.text, '/t')).to.deep.equal([]);
    });
  });

  describe('renderMessage with the default templates', () => {
    const recipient = 'slack:ops';
    const ack = `${ACK}?for=${recipient}`;
    const words = (kind: NotificationKind, alert: StateAlert = sampleAlert): { title: string; text: string } =>
      renderMessage(notification([item(kind, alert)]), {}, recipient, NOW);

    it('down: names the monitor, the cause, since when, and the acknowledge link for this recipient', () => {
      const { title, text } = words('down');
      expect(title).to.equal('DOWN: a');
      expect(text).to.include('a (http://a.test/) is down: connection refused, since 2026-11-22T10:00:00.000Z.');
      expect(text)
        .to.include(`Acknowledge: ${ack}`)
        .and.to.include('Monitor: https://console.example.test/monitors/mon_a');
    });

    it('reminder: still down, for how long, the cause, which reminder, and the acknowledge link', () => {
      const { title, text } = words('reminder');
      expect(title).to.equal('STILL DOWN: a');
      expect(text).to.include('is still down after 5m 30s: connection refused (reminder 3).');
      expect(text).to.include(`Acknowledge: ${ack}`);
    });

    it('escalation: the cause, the step notified, and the acknowledge link', () => {
      const { title, text } = words('escalation');
      expect(title).to.equal('DOWN (escalated): a');
      expect(text).to.include('is down: connection refused').and.to.include('step 2 is notified');
      expect(text).to.include(`Acknowledge: ${ack}`);
    });

    it('up: back up after how long, and no acknowledge link (nothing is left to acknowledge)', () => {
      const { title, text } = words('up', upAlert);
      expect(title).to.equal('UP: a');
      expect(text).to.match(/^a \(http:\/\/a\.test\/\) is up again after \d+[hms]/);
      expect(text).not.to.include('Acknowledge');
    });

    it("up: the incident lasted from its down to its up, started then, and was caused by the down's check", () => {
      const up = { ...item('up', upAlert), opening: sampleAlert };
      const view = messageView(notification([up]), 'email:ops@example.test', NOW) as {
        incident: { duration: string; started_at: string; cause: string };
      };
      // down 10:00:00, up 10:04:00: 4 minutes, whatever the clock says now.
      expect(view.incident.duration).to.equal('4m 0s');
      expect(view.incident.started_at).to.equal(sampleAlert.created_at);
      expect(view.incident.cause).to.equal('connection refused');
    });

    it('acknowledged: the cause and who acknowledged', () => {
      const { title, text } = words('acknowledged');
      expect(title).to.equal('ACKNOWLEDGED: a');
      expect(text).to.include('is down: connection refused; email:ops@example.test acknowledged the incident.');
    });

    it('test: says it is a test, naming the monitor, with the acknowledge link to try', () => {
      const { title, text } = words('test');
      expect(title).to.equal('TEST: a');
      expect(text).to.include('a (http://a.test/) – this is a test notification; nothing is down.');
      expect(text).to.include(`Acknowledge: ${ack}`);
    });

    it('every kind has its words (no kind renders an empty text)', () => {
      for (const kind of NOTIFICATION_KINDS) expect(words(kind).text, kind).to.match(/\S/);
    });

    it('grouped: one title counting the incidents, and a line per incident with its cause', () => {
      const other = { ...sampleAlert, monitor: { name: 'b', url: 'http://b.test/' } };
      const { title, text } = renderMessage(notification([item('down'), item('down', other)]), {}, recipient, NOW);
      expect(title).to.equal('2 monitors changed state');
      expect(text.split('\n')).to.deep.equal([
        'DOWN: a (http://a.test/): connection refused',
        'DOWN: b (http://b.test/): connection refused',
      ]);
    });
  });

  describe('escaping', () => {
    const view = messageView(
      notification([item('down', { ...sampleAlert, monitor: { name: '<a href="x">&\'"\n', url: 'http://a.test/' } })]),
      'email:x',
      NOW,
    );

    it('html escapes &, <, >, " and \' in values, never in the template', () => {
      expect(renderTemplate('<b>{{monitor.name}}</b>', view, 'html')).to.equal(
        '<b>&lt;a href=&quot;x&quot;&gt;&amp;&#39;&quot;\n</b>',
      );
    });

    it('json escapes a value as inside a JSON string', () => {
      const body = renderTemplate('{"n":"{{monitor.name}}"}', view, 'json');
      expect(JSON.parse(body)).to.deep.equal({ n: '<a href="x">&\'"\n' });
    });

    it('numbers render as numbers under every escape', () => {
      for (const escape of ['text', 'html', 'json'] as const) {
        expect(renderTemplate('{{count}}/{{check.response_time}}', view, escape)).to.equal('1/3');
      }
    });

    it('text inserts values as they are; triple braces never escape', () => {
      expect(renderTemplate('{{monitor.name}}|{{{monitor.name}}}', view, 'html')).to.equal(
        '&lt;a href=&quot;x&quot;&gt;&amp;&#39;&quot;\n|<a href="x">&\'"\n',
      );
      expect(renderTemplate('{{monitor.name}}', view, 'text')).to.equal('<a href="x">&\'"\n');
    });

    it('a template that does not parse renders as its source, never throws', () => {
      expect(renderTemplate('{{#a}}', view)).to.equal('{{#a}}');
    });
  });
});
