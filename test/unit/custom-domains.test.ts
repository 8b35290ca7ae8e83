import { expect } from 'chai';
import { createSocket } from 'node:dgram';
import { createStatusFollowValidators } from '@telemetry/contract';
import { customDomainPath, hostOf, OperatorHosts } from '../../services/query-service/src/status/host.js';
import { txtLookup, TxtLookupError } from '../../services/query-service/src/status/txt-lookup.js';
import { TestDnsServer } from '../support/dns-server.js';

describe('custom domains: the Host routing and the TXT lookup', () => {
  it('reads a Host header as a lower-case host name without port, brackets or final dot', () => {
    expect(hostOf('Status.Example.TEST:8443')).to.equal('status.example.test');
    expect(hostOf('status.example.test.')).to.equal('status.example.test');
    expect(hostOf('127.0.0.1:3000')).to.equal('127.0.0.1');
    expect(hostOf('[::1]:3000')).to.equal('::1');
    expect(hostOf('[2001:DB8::1]')).to.equal('2001:db8::1');
    expect(hostOf('::1')).to.equal('::1');
    expect(hostOf(undefined)).to.equal(undefined);
  });

  it("knows the operator's host names (served whole) and the names under them (never a custom domain)", () => {
    const operator = new OperatorHosts('https://Status.Operator.test:8443', ['console.operator.test', 'API.op.test.']);
    for (const served of [
      'status.operator.test',
      'console.operator.test',
      'api.op.test',
      'localhost',
      '10.0.0.1',
      '::1',
    ]) {
      expect(operator.serves(served), served).to.equal(true);
      expect(operator.covers(served), served).to.equal(true);
    }
    for (const under of ['x.status.operator.test', 'a.b.console.operator.test', 'evil.localhost']) {
      expect(operator.serves(under), under).to.equal(false);
      expect(operator.covers(under), under).to.equal(true);
    }
    for (const other of ['status.example.test', 'operator.test', 'xstatus.operator.test', 'notlocalhost']) {
      expect(operator.covers(other), other).to.equal(false);
    }
    // OPERATOR_HOSTS unset: loadConfig gives '' (an empty default), not [].
    expect(new OperatorHosts('http://127.0.0.1:3000', '').covers('status.example.test')).to.equal(false);
  });

  it("maps a custom domain's paths to its page, lets its API and files through, and nothing else", () => {
    const map = (path: string) => customDomainPath(path, 'shop');
    expect(map('/')).to.equal('/status/shop');
    expect(map('/history')).to.equal('/status/shop/history');
    expect(map('/history/')).to.equal('/status/shop/history');
    expect(map('/subscription')).to.equal('/status/shop/subscription');
    expect(map('/feed.rss')).to.equal('/status/shop/feed.rss');
    expect(map('/feed.atom')).to.equal('/status/shop/feed.atom');
    expect(map('/badges/mon_1/uptime.svg')).to.equal('/status/shop/badges/mon_1/uptime.svg');
    for (const kept of [
      '/status/shop',
      '/status/shop/history',
      '/api/status/shop',
      '/api/status/shop/subscribers',
      '/api/status-domain',
      '/console/status.js',
      '/console/console.css',
      '/healthz',
      '/readyz',
    ]) {
      expect(map(kept), kept).to.equal(kept);
    }
    for (const refused of [
      '/api/status/other',
      '/api/status/shopx',
      '/status/other',
      '/status/shop-2',
      '/api/monitors',
      '/API/status/shop',
      '/api/session',
      '/console/',
      '/console/index.html',
      // Nothing of the console itself: only the files status.html loads.
      '/console/main.js',
      '/console/vendor/uPlot.iife.min.js',
      '/metrics',
      '/openapi.json',
      '/ack/abc',
      '/api/status/shop/../../monitors',
      '/api/status/shop/%2e%2e/x',
      '/api/status/shop%2F..%2Fother',
      '/badges/..',
    ]) {
      expect(map(refused), refused).to.equal(undefined);
    }
  });

  it('compiles the schemas of status-page followers (ajv strict) and takes lower-case host names only', () => {
    const v = createStatusFollowValidators();
    expect(v.domainCreate({ hostname: 'status.example.test' })).to.equal(true);
    for (const hostname of ['Status.example.test', '127.0.0.1', 'localhost', '*.example.test', 'a..example.test']) {
      expect(v.domainCreate({ hostname }), hostname).to.equal(false);
    }
    expect(v.subscribe({ email: 'a@example.test' })).to.equal(true);
    expect(v.subscribe({ email: 'a@example.test', webhook: 'https://example.test/hook' })).to.equal(false);
  });

  describe('TXT lookups through the configured resolver (loopback only)', () => {
    const dns = new TestDnsServer();
    before(() => dns.start());
    after(() => dns.stop());

    it('answers the records (chunks joined), [] for a name without one', async () => {
      dns.records.set('_telemetry-verify.status.example.test', { TXT: ['telemetry-verify=abc', 'other'] });
      const lookup = txtLookup(`127.0.0.1:${dns.port}`, 2000);
      expect(await lookup('_telemetry-verify.status.example.test')).to.deep.equal(['telemetry-verify=abc', 'other']);
      expect(await lookup('_telemetry-verify.nothing.example.test')).to.deep.equal([]);
    });

    it('gives up at the deadline when the resolver does not answer', async () => {
      // A UDP socket that reads every question and answers none.
      const silent = createSocket('udp4');
      await new Promise<void>((r) => silent.bind(0, '127.0.0.1', r));
      try {
        const started = Date.now();
        const err = await txtLookup(
          `127.0.0.1:${silent.address().port}`,
          300,
        )('x.example.test').then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).to.be.instanceOf(TxtLookupError);
        expect((err as TxtLookupError).reason).to.contain('300 ms');
        expect(Date.now() - started).to.be.lessThan(2000);
      } finally {
        await new Promise<void>((r) => silent.close(() => r()));
      }
    });
  });
});
