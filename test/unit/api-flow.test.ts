import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import {
  failedAssertion,
  MONITOR_LIMITS,
  MONITOR_TYPE_MODULES,
  parseAssertions,
  placeholdersOf,
  resolveStepUrl,
  substitute,
  typeDefaults,
  typeProblems,
  type ApiStep,
  type MonitorSettings,
} from '@telemetry/contract';
import { EgressPolicy, SecretBox } from '@telemetry/platform';
import {
  deniedTargets,
  MASK,
  openMonitor,
  publicMonitor,
  sealMonitor,
  unmaskPatch,
  type StoredMonitor,
} from '@telemetry/store';
import { apiFlowProbe, fillRequest, redact } from '../../services/check-runner/src/probes/api-flow.js';

const flow = (steps: ApiStep[], over: Partial<MonitorSettings> = {}): MonitorSettings => ({
  ...typeDefaults('api_flow'),
  name: 'flow',
  url: 'https://api.example.test/v1/',
  api_steps: steps,
  ...over,
});

/** `path message` of each problem of the monitor's type. */
const problems = (s: MonitorSettings): string[] => typeProblems(s).map((p) => `${p.path} ${p.message}`);

const login: ApiStep = {
  name: 'login',
  method: 'POST',
  url: '/login',
  body: '{"user":"probe","password":"{{password}}"}',
  extract: { token: '$.token' },
};
const profile: ApiStep = { name: 'profile', url: '/me', headers: { Authorization: 'Bearer {{token}}' } };

describe('api_flow monitors (unit)', () => {
  describe('problems at creation', () => {
    it('takes a flow whose placeholders are all set by variables or earlier extracts', () => {
      expect(problems(flow([login, profile], { variables: { password: 'pw' } }))).to.deep.equal([]);
    });

    it('refuses a placeholder no earlier step extracts and variables does not set, at the field’s path', () => {
      expect(problems(flow([login, profile]))).to.deep.equal([
        '/api_steps/0/body uses {{password}}, which no earlier step extracts and variables does not set',
      ]);
      // A step's own extract is not there yet when it sends its request.
      const self: ApiStep = { ...profile, extract: { token: 'header.x-token' } };
      expect(problems(flow([self]))).to.deep.equal([
        '/api_steps/0/headers/Authorization uses {{token}}, which no earlier step extracts and variables does not set',
      ]);
      // Nor does a later step's extract count.
      expect(problems(flow([profile, login], { variables: { password: 'pw' } }))).to.deep.equal([
        '/api_steps/0/headers/Authorization uses {{token}}, which no earlier step extracts and variables does not set',
      ]);
      expect(problems(flow([{ url: '/items/{{never_set}}?q={{ never_set }}' }]))).to.deep.equal([
        '/api_steps/0/url uses {{never_set}}, which no earlier step extracts and variables does not set',
      ]);
      expect(problems(flow([{ url: '/x', headers: { 'X-A': '{{1bad}}' } }]))[0]).to.match(
        /^\/api_steps\/0\/headers\/X-A \{\{1bad\}\} is no placeholder/,
      );
    });

    it('has 1 to 10 steps', () => {
      const message = '/api_steps an api_flow monitor has 1 to 10 steps';
      expect(problems(flow([]))).to.deep.equal([message]);
      const eleven = Array.from({ length: 11 }, (_, i): ApiStep => ({ url: `/s${i}` }));
      expect(problems(flow(eleven))).to.deep.equal([message]);
      expect(problems(flow(eleven.slice(0, 10)))).to.deep.equal([]);
    });

    it('refuses a placeholder in a step URL’s scheme, host or port, and a URL that is neither a path nor http(s)', () => {
      const hostOnly = 'may use {{name}} in its path and query only, not in its scheme, host or port';
      const vars = { variables: { host: 'a.example.test', port: '8443' } };
      expect(problems(flow([{ url: 'https://{{host}}/x' }], vars))).to.deep.equal([`/api_steps/0/url ${hostOnly}`]);
      expect(problems(flow([{ url: 'https://api.example.test:{{port}}/x' }], vars))).to.deep.equal([
        `/api_steps/0/url ${hostOnly}`,
      ]);
      expect(problems(flow([{ url: '//evil.example.test/x' }]))[0]).to.match(/^\/api_steps\/0\/url is a path/);
      expect(problems(flow([{ url: 'https://other.example.test/a/{{host}}' }], vars))).to.deep.equal([]);
    });

    it('refuses \\, whitespace and control characters in a step URL, and a relative one that leaves the base’s origin', () => {
      const vars = { variables: { host: 'evil.example' } };
      const bad = ['/\\evil.example/x', '/\\{{host}}/x', '/\t/evil.example/x', '/x\r\n', '/a b'];
      for (const url of bad) {
        const found = problems(flow([{ url }], vars));
        expect(found, JSON.stringify(url)).to.have.length(1);
        expect(found[0]).to.match(/^\/api_steps\/0\/url /);
      }
      expect(problems(flow([{ url: 'http:evil.example/x' }]))).to.deep.equal([
        "/api_steps/0/url resolves to http://evil.example, not the monitor URL's origin: write another origin as an absolute http:// or https:// URL",
      ]);
      expect(problems(flow([{ url: 'x/{{host}}' }], vars))).to.deep.equal([]);
      // targets: where the step resolves, as the runner sends it.
      expect(MONITOR_TYPE_MODULES.api_flow.targets(flow([{ url: '/\\10.0.0.1/x' }]))).to.deep.equal([
        { path: '/url', url: 'https://api.example.test/v1/' },
        { path: '/api_steps/0/url', url: 'https://10.0.0.1/' },
      ]);
    });

    it('refuses an extract source that does not parse, a GET or HEAD step with a body, a forbidden header, a bad assertion', () => {
      const bad = problems(
        flow([
          { url: '/a', extract: { token: 'body.token' } },
          { url: '/b', method: 'HEAD', body: '{}' },
          { url: '/c', headers: { Host: 'x.example.test' } },
          { url: '/d', assertions: ['status =='] },
        ]),
      );
      expect(bad.map((p) => p.split(' ')[0])).to.deep.equal([
        '/api_steps/0/extract/token',
        '/api_steps/1/body',
        '/api_steps/2/headers/Host',
        '/api_steps/3/assertions/0',
      ]);
      expect(bad[1]).to.equal('/api_steps/1/body GET and HEAD steps send no body');
      expect(problems(flow([{ url: '/a', method: 'GET', body: '{"a":1}' }]))).to.deep.equal([
        '/api_steps/0/body GET and HEAD steps send no body',
      ]);
    });

    it('has the egress policy judge the base URL and every absolute step URL at creation', () => {
      const s = flow([{ url: '/a' }, { url: 'http://10.0.0.1:8080/b' }, { url: 'https://api.example.test/c' }]);
      expect(MONITOR_TYPE_MODULES.api_flow.targets(s)).to.deep.equal([
        { path: '/url', url: 'https://api.example.test/v1/' },
        { path: '/api_steps/1/url', url: 'http://10.0.0.1:8080/' },
        { path: '/api_steps/2/url', url: 'https://api.example.test/' },
      ]);
      expect(deniedTargets(s, new EgressPolicy()).map((p) => p.path)).to.deep.equal(['/api_steps/1/url']);
    });
  });

  describe('placeholders', () => {
    it('finds {{name}} with optional spaces, and says which are no variable name', () => {
      expect(placeholdersOf('a {{x}} b {{ y_2 }} {{9z}} {{}}').map((p) => [p.name, p.valid])).to.deep.equal([
        ['x', true],
        ['y_2', true],
        ['9z', false],
        ['', false],
      ]);
    });

    it('fills values in as they are, and leaves a name without a value as written', () => {
      const values = new Map([
        ['token', 'abc'],
        ['__proto__', 'p'],
      ]);
      expect(substitute('Bearer {{token}} {{ token }} {{__proto__}} {{gone}}', values)).to.deep.equal({
        text: 'Bearer abc abc p {{gone}}',
        missing: ['gone'],
      });
    });

    it('percent-encodes values in a step’s URL (no value adds a segment, a query item or a fragment), and resolves a path against the base', () => {
      const values = new Map([
        ['id', 'a b/../c?d#e'],
        ['q', 'x&admin=1'],
      ]);
      const r = resolveStepUrl('https://api.example.test/v1/?k=1', '/items/{{id}}?q={{q}}', values);
      expect(r.missing).to.deep.equal([]);
      expect(r.url?.href).to.equal('https://api.example.test/items/a%20b%2F..%2Fc%3Fd%23e?q=x%26admin%3D1');
      expect(resolveStepUrl('https://api.example.test/', 'http://other.test:81/{{id}}', values).url?.host).to.equal(
        'other.test:81',
      );
    });

    it('fills a step’s request: headers and body as they are, GET without a body, a value no header may hold refused', () => {
      const values = new Map([
        ['token', 't"1'],
        ['bad', 'a\r\nX-Injected: 1'],
      ]);
      expect(
        fillRequest(
          'http://127.0.0.1/',
          { url: '/p', method: 'PUT', headers: { Authorization: 'Bearer {{token}}' }, body: '{"t":"{{token}}"}' },
          values,
        ),
      ).to.deep.equal({ url: 'http://127.0.0.1/p', headers: { Authorization: 'Bearer t"1' }, body: '{"t":"t"1"}' });
      expect(fillRequest('http://127.0.0.1/', { url: '/p', body: 'x' }, values)).to.have.property('body', null);
      const refused = fillRequest('http://127.0.0.1/', { url: '/p', headers: { 'X-A': '{{bad}}' } }, values);
      expect(refused).to.deep.equal({
        failure: { error: 'step_failed', words: 'header X-A: a value filled in is not valid in a header' },
      });
      expect(JSON.stringify(refused)).to.not.include('Injected');
    });

    it('redacts every value (as is and JSON-escaped) from a detail', () => {
      expect(redact('saw "s3cr\\"et" and s3cr"et, ok', ['s3cr"et', 'ok'])).to.equal('saw "****" and ****, ok');
    });

    it('redacts a value JSON-escaped twice (a detail quoting an echoed JSON body) and percent-encoded', () => {
      const secret = 's3"c\\ret/pw';
      const echoed = JSON.stringify({ echo: secret }); // the answer's body
      const detail = `saw ${JSON.stringify(echoed)} and ${encodeURIComponent(secret)} and ${JSON.stringify(secret)}`;
      const masked = redact(detail, [secret]);
      expect(masked).to.equal('saw "{\\"echo\\":\\"****\\"}" and **** and "****"');
      expect(masked).to.not.match(/s3|ret/);
    });

    it('masks an assertion’s detail before cutting it to length: a value at the cut is not half shown', () => {
      const secret = 'hunter2-very-secret-value';
      const list = parseAssertions(['body contains "nope"'], 'api_step');
      if (!list.ok) throw new Error(list.problem);
      const head = 'assertion body contains "nope" failed: saw "';
      // The secret starts 10 characters before the cut.
      const body = `${'a'.repeat(MONITOR_LIMITS.maxCheckDetailLength - 1 - head.length - 10)}${secret}${'b'.repeat(100)}`;
      const subject = { status_code: 200, response_time: 1, header: () => undefined, body, body_truncated: false };
      expect(failedAssertion(list.value, subject), 'unmasked, the cut shows its start').to.include('hunter2-v');
      const detail = failedAssertion(list.value, subject, (t) => redact(t, [secret]))!;
      expect(detail).to.not.include('hunter2');
      expect(detail.length).to.be.at.most(MONITOR_LIMITS.maxCheckDetailLength);
      expect(detail).to.match(/a\*\*\*\*b+…$/);
    });
  });

  describe('sealed variables', () => {
    const box = new SecretBox([{ id: 'k1', key: randomBytes(32) }]);
    const stored: StoredMonitor = {
      ...flow([login, profile], { variables: { password: 'hunter2-secret' } }),
      tenant_id: 'ten_a',
      key: null,
      id: 'mon_a',
      webhook_secret: 'whsec_x',
      created_at: '2026-11-27T00:00:00Z',
      updated_at: '2026-11-27T00:00:00Z',
      version: 1,
    };

    it('stores the values sealed (spec shows MASK), opens them, and shows MASK in answers', () => {
      const { spec, sealed } = sealMonitor(stored, box);
      expect(spec).to.not.include('hunter2-secret');
      expect(sealed).to.not.include('hunter2-secret');
      expect((JSON.parse(spec) as MonitorSettings).variables).to.deep.equal({ password: MASK });
      expect(openMonitor(spec, sealed, 1, box).variables).to.deep.equal({ password: 'hunter2-secret' });
      expect(publicMonitor(stored).variables).to.deep.equal({ password: MASK });
      expect(JSON.stringify(publicMonitor(stored))).to.not.include('hunter2-secret');
    });

    it('opens a row sealed before variables existed (none in sealed)', () => {
      const { spec } = sealMonitor({ ...stored, variables: {} }, box);
      const sealedOld = box.seal(
        JSON.stringify({ url: stored.url, headers: {}, webhook_secret: 'whsec_x', webhooks: [] }),
        'monitors/ten_a/mon_a',
      );
      const specOld = JSON.stringify({ ...(JSON.parse(spec) as object), variables: undefined });
      expect(openMonitor(specOld, sealedOld, 1, box)).to.include({ url: stored.url, webhook_secret: 'whsec_x' });
      expect(openMonitor(specOld, sealedOld, 1, box).variables).to.deep.equal({});
    });

    it('keeps the stored value for MASK in a PATCH, and takes a new one', () => {
      const { patch, dropped } = unmaskPatch(stored, { variables: { password: MASK, user: 'probe' } });
      expect(patch.variables).to.deep.equal({ password: 'hunter2-secret', user: 'probe' });
      expect(dropped).to.deep.equal([]);
      expect(unmaskPatch(stored, { variables: { password: 'new' } }).patch.variables).to.deep.equal({
        password: 'new',
      });
      // A path on the same origin keeps them.
      expect(unmaskPatch(stored, { url: 'https://api.example.test/v2/' }).patch.variables).to.equal(undefined);
    });

    it('does not carry the stored values to an origin the flow did not reach, and names them', () => {
      const moved = unmaskPatch(stored, { url: 'https://elsewhere.example.test/' });
      expect(moved.patch.variables).to.deep.equal({});
      expect(moved.dropped).to.deep.equal(['variables.password']);
      const stepMoved = unmaskPatch(stored, {
        api_steps: [{ ...login, url: 'http://127.0.0.1:9/login' }],
        variables: { password: MASK },
      });
      expect(stepMoved.patch.variables).to.deep.equal({});
      expect(stepMoved.dropped).to.deep.equal(['variables.password']);
      // A path the URL parser reads as another host (`\` is `/` in http URLs) moves them too.
      for (const url of ['/\\elsewhere.example.test/login', 'http:elsewhere.example.test/login']) {
        const sneaky = unmaskPatch(stored, { api_steps: [{ ...login, url }], variables: { password: MASK } });
        expect(sneaky.dropped, url).to.deep.equal(['variables.password']);
      }
      // Sent again with the move: taken.
      expect(
        unmaskPatch(stored, { url: 'https://elsewhere.example.test/', variables: { password: 'again' } }).patch
          .variables,
      ).to.deep.equal({ password: 'again' });
    });
  });

  describe('the probe over real sockets', () => {
    let server: Server;
    let base: string;
    let refuse = false;
    const token = `tok-${randomBytes(6).toString('hex')}`;
    before(async () => {
      server = createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          const json = (code: number, v: unknown) =>
            res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(v));
          if (req.url === '/login' && req.method === 'POST') {
            const { password } = JSON.parse(body) as { password: string };
            return password === 'pw-secret' ? json(200, { token }) : json(403, { error: 'no' });
          }
          if (req.url === '/me') {
            return !refuse && req.headers.authorization === `Bearer ${token}`
              ? json(200, { user: 'probe', echo: req.headers.authorization })
              : json(401, { error: 'bad token' });
          }
          if (req.url === '/slow') return setTimeout(() => json(200, {}), 400);
          json(404, {});
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      base = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
    });
    after(() => {
      server.closeAllConnections();
      server.close();
    });
    const ctx = {
      userAgent: 'test',
      checkId: 'chk_x',
      monitorId: 'mon_x',
      maxBodyBytes: 100_000,
      policy: new EgressPolicy({ allow: ['127.0.0.1/32'] }),
    };
    const signIn = (over: Partial<MonitorSettings> = {}) =>
      flow([login, profile], { url: base, variables: { password: 'pw-secret' }, ...over });

    it('signs in, carries the token to the next step, and times each step', async () => {
      refuse = false;
      const r = await apiFlowProbe(signIn(), ctx);
      expect(r).to.include({ status: 'up', status_code: 200 });
      expect(r.timings?.steps?.map((s) => [s.name, s.ok, s.status_code])).to.deep.equal([
        ['login', true, 200],
        ['profile', true, 200],
      ]);
      const total = r.timings!.steps!.reduce((t, s) => t + s.duration_ms, 0);
      expect(r.response_time).to.be.at.least(total - 1);
    });

    it('fails at the step whose status is not expected, naming it, and runs no later step', async () => {
      refuse = true;
      const r = await apiFlowProbe(
        flow([login, profile, { url: '/never' }], { url: base, variables: { password: 'pw-secret' } }),
        ctx,
      );
      expect(r).to.include({ status: 'down', status_code: 401, error: 'unexpected_status' });
      expect(r.detail).to.equal('step 2 "profile": status 401, expected 2xx');
      expect(r.timings?.steps?.map((s) => s.ok)).to.deep.equal([true, false]);
      refuse = false;
    });

    it('fails a step whose assertion does not hold, without any variable’s value in the detail', async () => {
      const echo: ApiStep = { ...profile, assertions: ['$.echo == "nobody"'] };
      const r = await apiFlowProbe(flow([login, echo], { url: base, variables: { password: 'pw-secret' } }), ctx);
      expect(r).to.include({ status: 'down', error: 'assertion_failed', status_code: 200 });
      expect(r.detail).to.match(/^step 2 "profile": assertion \$\.echo == "nobody" failed: saw "Bearer \*\*\*\*"$/);
      expect(r.detail).to.not.include(token);
    });

    it('never resends a step’s body to another origin on a 307/308: the step fails, the other origin sees nothing', async () => {
      // Two loopback servers, two ports: two origins.
      const seen: string[] = [];
      const other = createServer((req, res) => {
        req.on('data', (c: Buffer) => seen.push(c.toString()));
        req.on('end', () => res.writeHead(200).end('{"token":"t"}'));
      });
      await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
      const elsewhere = `http://127.0.0.1:${(other.address() as { port: number }).port}`;
      const bouncer = createServer((req, res) => {
        req.resume();
        const same = req.url!.startsWith('/same');
        req.on('end', () =>
          same && req.url !== '/same/login'
            ? res.writeHead(200).end('{"token":"t"}')
            : res
                .writeHead(req.url === '/308' ? 308 : 307, { location: same ? '/same/ok' : `${elsewhere}/login` })
                .end(),
        );
      });
      await new Promise<void>((r) => bouncer.listen(0, '127.0.0.1', r));
      const from = `http://127.0.0.1:${(bouncer.address() as { port: number }).port}/`;
      try {
        for (const url of ['/307', '/308']) {
          const r = await apiFlowProbe(
            flow([{ ...login, url }], { url: from, variables: { password: 'pw-secret' }, follow_redirects: true }),
            ctx,
          );
          expect(r, url).to.include({ status: 'down', error: 'network' });
          expect(r.detail).to.equal('step 1 "login": redirect to another origin would resend the body');
        }
        expect(seen.join(''), 'the other origin got no body').to.not.include('pw-secret');
        expect(seen).to.deep.equal([]);
        // The same origin still takes it, and a bodiless GET still goes anywhere.
        const same = await apiFlowProbe(
          flow([{ ...login, url: '/same/login' }], {
            url: from,
            variables: { password: 'pw-secret' },
            follow_redirects: true,
          }),
          ctx,
        );
        expect(same).to.include({ status: 'up' });
        const get = await apiFlowProbe(flow([{ url: '/307' }], { url: from, follow_redirects: true }), ctx);
        expect(get).to.include({ status: 'up' });
      } finally {
        for (const s of [other, bouncer]) {
          s.closeAllConnections();
          s.close();
        }
      }
    });

    it('fails a step whose extract finds nothing, saying which', async () => {
      const r = await apiFlowProbe(
        flow([{ ...login, extract: { token: '$.session.id' } }, { url: '/me' }], {
          url: base,
          variables: { password: 'pw-secret' },
        }),
        ctx,
      );
      expect(r).to.include({ status: 'down', error: 'step_failed', status_code: 200 });
      expect(r.detail).to.equal('step 1 "login": extract token: $.session.id is not in the answer');
    });

    it('runs the whole flow within timeout_ms: a step past the deadline is a timeout', async () => {
      const r = await apiFlowProbe(
        flow([{ url: '/slow' }, { name: 'slow again', url: '/slow' }], {
          url: base,
          timeout_ms: 600,
          interval_seconds: 5,
        }),
        ctx,
      );
      expect(r).to.include({ status: 'down', error: 'timeout', status_code: 0 });
      expect(r.detail).to.equal(`step 2 "slow again": no answer within the flow's timeout_ms (600 ms)`);
      expect(r.response_time).to.be.within(550, 900);
    });

    it('does not pass a stored flow without steps', async () => {
      expect(await apiFlowProbe(flow([], { url: base }), ctx)).to.include({
        status: 'down',
        error: 'step_failed',
        detail: 'the flow has no steps',
      });
    });

    it('is degraded when the whole flow is slower than degraded_threshold_ms', async () => {
      const r = await apiFlowProbe(flow([{ url: '/slow' }], { url: base, degraded_threshold_ms: 100 }), ctx);
      expect(r).to.include({ status: 'degraded', status_code: 200 });
    });

    it('refuses a step whose address the egress policy denies, naming the step', async () => {
      const r = await apiFlowProbe(flow([{ url: '/me', name: 'denied' }], { url: base }), {
        ...ctx,
        policy: new EgressPolicy(),
      });
      expect(r).to.include({ status: 'down', error: 'target_not_allowed', response_time: 0 });
      expect(r.detail).to.equal('step 1 "denied": the egress policy refused its address');
    });
  });
});
