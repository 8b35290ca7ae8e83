import { expect } from 'chai';
import {
  ASSERTION_LIMITS,
  assertionProblems,
  compilePattern,
  createValidators,
  detailOf,
  failedAssertion,
  MONITOR_LIMITS,
  parseAssertion,
  parseAssertions,
  parseValueSource,
  readSource,
  typeProblems,
  type Assertion,
  type AssertionContext,
  type AssertionSubject,
  type MonitorSettings,
} from '@telemetry/contract';
import { judge } from '@telemetry/check-runner';
import { DEFAULT_MONITOR } from '@telemetry/store';
import { asserted } from '../../services/check-runner/src/probes/assert.js';
import { checkMessage, failed } from '../../services/check-runner/src/probes/verdict.js';

function parsed(text: string, context: AssertionContext = 'http'): Assertion {
  const p = parseAssertion(text, context);
  if (!p.ok) throw new Error(`${text}: ${p.problem}`);
  return p.value;
}

/** The detail of one assertion on `subject` (undefined: it holds). */
function judged(text: string, subject: AssertionSubject, context: AssertionContext = 'http'): string | undefined {
  return failedAssertion([parsed(text, context)], subject);
}

const json = (v: unknown): AssertionSubject => ({ body: JSON.stringify(v) });

describe('assertions (docs/assertions.md)', () => {
  describe('parseAssertion', () => {
    it('parses each subject, operator and literal', () => {
      const table: [string, AssertionContext, Partial<Assertion>][] = [
        ['status == 200', 'http', { subject: { kind: 'status' }, operator: '==', value: 200 }],
        ['  status==200  ', 'http', { text: 'status==200', operator: '==', value: 200 }],
        ['response_time < 500', 'http', { subject: { kind: 'response_time' }, operator: '<', value: 500 }],
        ['response_time <= 1.5e3', 'dns', { operator: '<=', value: 1500 }],
        ['header.Content-Type contains "json"', 'http', { subject: { kind: 'header', name: 'content-type' } }],
        ['header.x-count >= 3', 'api_step', { operator: '>=', value: 3 }],
        ['body !contains "error"', 'http', { subject: { kind: 'body' }, operator: '!contains', value: 'error' }],
        ['body matches "^\\\\{"', 'http', { operator: 'matches', value: '^\\{' }],
        ['$ != null', 'http', { subject: { kind: 'json', path: [], length: false }, value: null }],
        ['$.status == "ok"', 'http', { subject: { kind: 'json', path: [{ key: 'status' }], length: false } }],
        [
          '$.data.items.length > 0',
          'http',
          { subject: { kind: 'json', path: [{ key: 'data' }, { key: 'items' }], length: true }, value: 0 },
        ],
        [
          '$.items[0].id == "a\\u00e9"',
          'api_step',
          {
            subject: { kind: 'json', path: [{ key: 'items' }, { index: 0 }, { key: 'id' }], length: false },
            value: 'aé',
          },
        ],
        [
          '$["odd key"][-1]["length"] == true',
          'http',
          {
            subject: { kind: 'json', path: [{ key: 'odd key' }, { index: -1 }, { key: 'length' }], length: false },
            value: true,
          },
        ],
        ['$.a-b_c == false', 'http', { subject: { kind: 'json', path: [{ key: 'a-b_c' }], length: false } }],
        ['tls.days_left >= 14', 'tls', { subject: { kind: 'tls_days_left' }, operator: '>=', value: 14 }],
        ['dns.answers contains "192.0.2.1"', 'dns', { subject: { kind: 'dns_answers', length: false } }],
        ['dns.answers.length == 2', 'dns', { subject: { kind: 'dns_answers', length: true }, value: 2 }],
      ];
      for (const [text, context, want] of table) {
        expect(parsed(text, context), text).to.deep.include(want);
      }
    });

    it('refuses a corpus of bad expressions, each with a problem in words', () => {
      const bad: [string, AssertionContext, RegExp][] = [
        ['', 'http', /empty/],
        ['   ', 'http', /empty/],
        ['status', 'http', /operator/],
        ['status 200', 'http', /operator/],
        ['status = 200', 'http', /operator/],
        ['status === 200', 'http', /not a JSON literal/],
        ['status ==', 'http', /needs a value/],
        ['status == 2xx', 'http', /not a JSON literal/],
        ["status == '200'", 'http', /not a JSON literal/],
        ['status == "200"', 'http', /is a number/],
        ['status < "fast"', 'http', /compares numbers/],
        ['response_time > null', 'http', /compares numbers/],
        ['status contains 2', 'http', /does not apply/],
        ['status matches "2.."', 'http', /does not apply|is a number/],
        ['$.a == [1]', 'http', /not an object or array/],
        ['$.a == {"b":1}', 'http', /not an object or array/],
        ['$.a == "ok" extra', 'http', /not a JSON literal/],
        ['$.a contains null', 'http', /takes/],
        ['body == 3', 'http', /compare it with a "string"/],
        ['body contains 3', 'http', /takes a "string"/],
        ['body matches 3', 'http', /pattern/],
        ['bodycontains "x"', 'http', /unknown subject/],
        ['body contains"x"', 'http', /operator/],
        ['colour == "red"', 'http', /unknown subject "colour"/],
        ['Status == 200', 'http', /unknown subject/],
        ['header. == "x"', 'http', /header name/],
        ['$.', 'http', /path step/],
        ['$..a == 1', 'http', /path step/],
        ['$.1a == 1', 'http', /path step/],
        ['$[x] == 1', 'http', /path step/],
        ['$["unterminated] == 1', 'http', /path step/],
        ["$['single'] == 1", 'http', /path step/],
        ['$[1.5] == 1', 'http', /path step/],
        [`$[${ASSERTION_LIMITS.maxArrayIndex + 1}] == 1`, 'http', /array index/],
        [`$${'.a'.repeat(ASSERTION_LIMITS.maxPathDepth + 1)} == 1`, 'http', /at most 32 steps/],
        ['status == 200', 'tls', /unknown subject "status": a tls assertion names tls.days_left/],
        ['$.a == 1', 'dns', /unknown subject/],
        ['tls.days_left > 3', 'http', /unknown subject/],
        ['dns.answers == "x"', 'dns', /is a list/],
        ['dns.answers contains 1', 'dns', /takes a "string"/],
        ['tls.days_left >= "14"', 'tls', /compares numbers/],
        ['body matches "("', 'http', /not a regular expression/],
        ['body matches "[z-a]"', 'http', /not a regular expression/],
        ['body matches "(a)\\\\1"', 'http', /linear time/],
        ['body matches "a(?=b)"', 'http', /linear time/],
        ['body matches "a(?!b)"', 'http', /linear time/],
        ['body matches ".{1000}"', 'http', /linear time/],
        [`body contains "${'x'.repeat(MONITOR_LIMITS.maxAssertionLength)}"`, 'http', /longer than 500/],
      ];
      for (const [text, context, problem] of bad) {
        const p = parseAssertion(text, context);
        expect(p.ok, text).to.equal(false);
        if (!p.ok) expect(p.problem, text).to.match(problem);
      }
    });

    it('reports the problems of a list at each index, as the API does', () => {
      const problems = assertionProblems(['status == 200', 'nope', '$.a < "b"'], '/assertions', 'http');
      expect(problems.map((p) => p.path)).to.deep.equal(['/assertions/1', '/assertions/2']);
      expect(problems[0]!.message).to.match(/^unknown subject "nope"/);
      expect(problems[1]!.message).to.equal('< compares numbers: "b" is not a number');
      const monitor = (over: Partial<MonitorSettings>): MonitorSettings => ({
        ...DEFAULT_MONITOR,
        name: 'm',
        url: 'http://127.0.0.1:1/',
        ...over,
      });
      const paths = (m: MonitorSettings): string[] => typeProblems(m).map((p) => p.path);
      expect(paths(monitor({ assertions: ['status == 200', 'body matches "(a)\\\\1"'] }))).to.deep.equal([
        '/assertions/1',
      ]);
      expect(paths(monitor({ type: 'tls', url: 'tls://127.0.0.1', assertions: ['tls.days_left > "x"'] }))).to.include(
        '/assertions/0',
      );
      expect(paths(monitor({ type: 'dns', url: 'dns://a.test', assertions: ['dns.answers == 1'] }))).to.include(
        '/assertions/0',
      );
      expect(
        paths(monitor({ type: 'dns', url: 'dns://a.test', assertions: ['dns.answers contains "x"'] })),
      ).to.deep.equal([]);
    });

    it('compiles matches for the linear-time engine, which runs a pathological pattern in linear time', () => {
      const re = compilePattern('^(a+)+$');
      expect(re.ok).to.equal(true);
      const a = parsed('body matches "^(a+)+$"');
      expect(a.regex?.flags).to.equal('l');
      const started = performance.now();
      // A backtracking engine takes years on this; the linear one milliseconds.
      expect(judged('body matches "^(a+)+$"', { body: `${'a'.repeat(50_000)}b` })).to.match(/failed: saw "aaa/);
      expect(performance.now() - started).to.be.lessThan(2000);
    });
  });

  describe('failedAssertion', () => {
    it('judges status, response time, headers and body', () => {
      const subject: AssertionSubject = {
        status_code: 200,
        response_time: 120,
        header: (n) => ({ 'content-type': 'application/json; charset=utf-8', 'x-count': '12' })[n],
        body: '{"status":"ok"}',
      };
      for (const holds of [
        'status == 200',
        'status != 500',
        'status >= 200',
        'status < 300',
        'response_time < 500',
        'response_time > 100',
        'response_time <= 120',
        'header.content-type contains "json"',
        'header.Content-Type matches "^application/json"',
        'header.x-count > 10',
        'header.x-count == "12"',
        'body contains "ok"',
        'body !contains "error"',
        'body matches "\\"status\\":\\\\s*\\"ok\\""',
        'body == "{\\"status\\":\\"ok\\"}"',
      ]) {
        expect(judged(holds, subject), holds).to.equal(undefined);
      }
      expect(judged('status == 201', subject)).to.equal('assertion status == 201 failed: saw 200');
      expect(judged('response_time < 100', subject)).to.equal('assertion response_time < 100 failed: saw 120');
      expect(judged('header.x-missing contains "a"', subject)).to.equal(
        'assertion header.x-missing contains "a" failed: saw nothing',
      );
      expect(judged('header.content-type > 3', subject)).to.match(/failed: saw "application\/json/);
      expect(judged('body contains "error"', subject)).to.equal(
        'assertion body contains "error" failed: saw "{\\"status\\":\\"ok\\"}"',
      );
    });

    it('walks JSON paths: members, indexes from either end, odd keys, lengths', () => {
      const body = json({
        status: 'degraded',
        data: { items: [{ id: 'a' }, { id: 'b' }], empty: [], name: 'shop', length: 7 },
        'odd key': { 'x.y': 1 },
        n: 3,
        flag: true,
        nothing: null,
      });
      for (const holds of [
        '$.data.items.length > 0',
        '$.data.items.length == 2',
        '$.data.empty.length == 0',
        '$.data.name.length == 4',
        '$.data.length == 7',
        '$.data["length"] == 7',
        '$.data.items[0].id == "a"',
        '$.data.items[-1].id == "b"',
        '$["odd key"]["x.y"] == 1',
        '$.n >= 3',
        '$.n != 4',
        '$.flag == true',
        '$.nothing == null',
        '$.status != "ok"',
        '$.status contains "grad"',
        '$.status matches "^deg"',
        '$.data.items[1].id !contains "a"',
      ]) {
        expect(judged(holds, body), holds).to.equal(undefined);
      }
      expect(judged('$.status == "ok"', body)).to.equal('assertion $.status == "ok" failed: saw "degraded"');
      expect(judged('$.data.items[2].id == "c"', body)).to.equal(
        'assertion $.data.items[2].id == "c" failed: saw nothing',
      );
      expect(judged('$.missing.length > 0', body)).to.equal('assertion $.missing.length > 0 failed: saw nothing');
      expect(judged('$.n.length > 0', body)).to.match(/saw nothing$/);
      expect(judged('$.data.items == null', body)).to.equal(
        'assertion $.data.items == null failed: saw [{"id":"a"},{"id":"b"}]',
      );
      // A number in a string is not a number.
      expect(judged('$.n > 1', json({ n: '3' }))).to.equal('assertion $.n > 1 failed: saw "3"');
      // A list holds a literal.
      expect(judged('$.tags contains "b"', json({ tags: ['a', 'b'] }))).to.equal(undefined);
      expect(judged('$.tags contains 2', json({ tags: [1, 2] }))).to.equal(undefined);
      expect(judged('$.tags !contains "c"', json({ tags: ['a'] }))).to.equal(undefined);
    });

    it('says when the body is not JSON, was cut short, or absent', () => {
      expect(judged('$.status == "ok"', { body: 'plain text' })).to.equal(
        'assertion $.status == "ok" failed: the body is not JSON',
      );
      expect(judged('$.status == "ok"', { body: '{"status":', body_truncated: true })).to.equal(
        'assertion $.status == "ok" failed: the body is not JSON (only its first 10 characters were read)',
      );
      expect(judged('$.status == "ok"', {})).to.equal('assertion $.status == "ok" failed: there is no body');
    });

    it('judges tls days left and dns answers', () => {
      expect(judged('tls.days_left >= 14', { tls_days_left: 30 }, 'tls')).to.equal(undefined);
      expect(judged('tls.days_left >= 60', { tls_days_left: 30 }, 'tls')).to.equal(
        'assertion tls.days_left >= 60 failed: saw 30',
      );
      const dns = { dns_answers: ['192.0.2.10', '192.0.2.11'] };
      expect(judged('dns.answers contains "192.0.2.11"', dns, 'dns')).to.equal(undefined);
      expect(judged('dns.answers.length == 2', dns, 'dns')).to.equal(undefined);
      expect(judged('dns.answers !contains "192.0.2.11"', dns, 'dns')).to.equal(
        'assertion dns.answers !contains "192.0.2.11" failed: saw ["192.0.2.10","192.0.2.11"]',
      );
    });

    it('names the first assertion that fails, in order', () => {
      const list = ['status == 200', '$.a == 1', '$.b == 2'].map((t) => parsed(t));
      expect(failedAssertion(list, { status_code: 200, body: '{"a":0,"b":0}' })).to.match(/^assertion \$\.a == 1/);
      expect(failedAssertion(list, { status_code: 200, body: '{"a":1,"b":2}' })).to.equal(undefined);
      expect(failedAssertion([], {})).to.equal(undefined);
    });

    it('keeps the detail within maxCheckDetailLength, cutting the value seen', () => {
      const text = `$.s == "${'x'.repeat(480)}"`;
      const detail = judged(text, json({ s: '😀'.repeat(2000) }))!;
      expect(detail.length).to.be.at.most(MONITOR_LIMITS.maxCheckDetailLength);
      expect(detail.startsWith(`assertion ${text} failed: saw "😀`)).to.equal(true);
      expect(detail.endsWith('…')).to.equal(true);
      // Never half a surrogate pair before the ellipsis.
      expect(/[\uD800-\uDBFF]…$/.test(detail)).to.equal(false);
      expect(detailOf({ text: 'a' }, 'b')).to.equal('assertion a failed: b');
      // The detail is valid in a check message.
      const v = createValidators();
      const msg = checkMessage(
        { id: 'mon_1', tenant_id: 'ten_1' },
        'chk_1',
        new Date('2026-01-01T00:00:00Z'),
        failed('assertion_failed', 5, { detail }),
        'here',
      );
      expect(v.checkMessage(msg), JSON.stringify(v.checkMessage.errors)).to.equal(true);
      expect(msg.detail).to.equal(detail);
    });
  });

  describe('parseValueSource and readSource', () => {
    it('reads a JSON path or a header as text', () => {
      const subject: AssertionSubject = {
        header: (n) => (n === 'x-token' ? 'abc' : undefined),
        body: JSON.stringify({ token: 't1', user: { id: 42, roles: ['a'] }, off: false, none: null }),
      };
      const read = (text: string): string | undefined => {
        const s = parseValueSource(text);
        if (!s.ok) throw new Error(s.problem);
        return readSource(s.value, subject);
      };
      expect(read('$.token')).to.equal('t1');
      expect(read(' $.user.id ')).to.equal('42');
      expect(read('$.user.roles')).to.equal('["a"]');
      expect(read('$.user.roles.length')).to.equal('1');
      expect(read('$.off')).to.equal('false');
      expect(read('$.none')).to.equal('null');
      expect(read('$.missing')).to.equal(undefined);
      expect(read('header.X-Token')).to.equal('abc');
      expect(read('header.x-none')).to.equal(undefined);
      const s = parseValueSource('$.token');
      expect(s.ok && readSource(s.value, { body: 'not json' })).to.equal(undefined);
    });

    it('refuses anything but $.path and header.<name>', () => {
      for (const bad of ['status', 'body', 'token', '$.a ==', '$..a', 'header.', '$.a extra', '']) {
        expect(parseValueSource(bad).ok, bad).to.equal(false);
      }
    });
  });

  describe('one parsed body per answer', () => {
    it('parses a body once for all of a step’s assertions and extracts', () => {
      const subject: AssertionSubject = {
        status_code: 200,
        response_time: 1,
        header: () => undefined,
        body: JSON.stringify({ a: 1, items: Array.from({ length: 10 }, (_, i) => ({ id: `id${i}` })) }),
        body_truncated: false,
      };
      const list = parseAssertions(['$.a == 1', '$.items.length == 10'], 'api_step');
      if (!list.ok) throw new Error(list.problem);
      const parse = JSON.parse;
      let parses = 0;
      JSON.parse = ((text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown): unknown => {
        parses++;
        return parse(text, reviver) as unknown;
      }) as typeof JSON.parse;
      try {
        expect(failedAssertion(list.value, subject)).to.equal(undefined);
        for (let i = 0; i < 10; i++) {
          const src = parseValueSource(`$.items[${i}].id`);
          if (!src.ok) throw new Error(src.problem);
          expect(readSource(src.value, subject)).to.equal(`id${i}`);
        }
      } finally {
        JSON.parse = parse;
      }
      expect(parses).to.equal(1);
    });
  });

  describe('in the runner', () => {
    const monitor = (assertions: string[]): MonitorSettings => ({
      ...DEFAULT_MONITOR,
      name: 'm',
      url: 'http://127.0.0.1:1/',
      assertions,
    });
    const answer = (body: string) => ({
      statusCode: 200,
      headers: { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] },
      body: Buffer.from(body),
      truncated: false,
    });

    it('judges an http answer: expected status first, then the assertions, keeping the status code', () => {
      const m = monitor(['header.set-cookie contains "b=2"', '$.status == "ok"']);
      expect(judge(m, answer('{"status":"ok"}'), 10, 1024)).to.deep.equal({
        status: 'up',
        status_code: 200,
        response_time: 10,
      });
      expect(judge(m, answer('{"status":"degraded"}'), 10, 1024)).to.deep.equal({
        status: 'down',
        status_code: 200,
        response_time: 10,
        error: 'assertion_failed',
        detail: 'assertion $.status == "ok" failed: saw "degraded"',
      });
      expect(judge({ ...m, expected_status_codes: [204] }, answer('{}'), 10, 1024)).to.deep.include({
        error: 'unexpected_status',
      });
    });

    it('fails a check whose stored assertion no longer parses, rather than skip it', () => {
      const r = asserted(monitor(['status = 200']), 'http', { status: 'up', status_code: 200, response_time: 1 }, {});
      expect(r).to.deep.include({ status: 'down', error: 'assertion_failed' });
      expect(r.detail).to.match(/^assertion status = 200 cannot be parsed: /);
      expect(parseAssertions(['status == 200'], 'http').ok).to.equal(true);
    });

    it('leaves a failing result as it is, and judges a degraded one', () => {
      const down = failed('timeout', 800);
      expect(asserted(monitor(['status == 200']), 'http', down, {})).to.equal(down);
      const slow = asserted(
        monitor(['response_time < 100']),
        'tls',
        { status: 'degraded', status_code: 0, response_time: 150 },
        {},
      );
      expect(slow).to.deep.include({ status: 'down', detail: 'assertion response_time < 100 failed: saw 150' });
    });
  });
});
