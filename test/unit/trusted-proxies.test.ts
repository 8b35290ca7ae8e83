import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Request } from 'express';
import {
  clientIp,
  ConfigError,
  createExpressApp,
  NO_TRUSTED_PROXIES,
  normalizeIp,
  parseTrustedProxies,
  useTrustedProxies,
  type TrustedProxies,
} from '@telemetry/platform';
import { loadGatewayConfig, stampOf } from '@telemetry/ingest-gateway';
import { loadQueryConfig } from '@telemetry/query-service';

/** A request as proxy-addr reads it: the socket's peer and the headers. */
function fakeRequest(peer: string | undefined, xff?: string, userAgent?: string): Request {
  const headers: Record<string, string> = {};
  if (xff !== undefined) headers['x-forwarded-for'] = xff;
  if (userAgent !== undefined) headers['user-agent'] = userAgent;
  return { socket: { remoteAddress: peer }, headers } as unknown as Request;
}

const ip = (proxies: TrustedProxies, peer: string | undefined, xff?: string): string | undefined =>
  clientIp(fakeRequest(peer, xff), proxies);

describe('TRUSTED_PROXIES (unit)', () => {
  describe('parsing', () => {
    it('takes addresses, CIDR blocks of both families and the named ranges, by commas or spaces', () => {
      const p = parseTrustedProxies(' 10.0.0.1, 192.168.0.0/16  fd00::/8,::1 loopback ');
      expect(p.entries).to.deep.equal(['10.0.0.1', '192.168.0.0/16', 'fd00::/8', '::1', 'loopback']);
      expect(p.trust('10.0.0.1', 0)).to.equal(true);
      expect(p.trust('10.0.0.2', 0)).to.equal(false);
      expect(p.trust('192.168.77.3', 0)).to.equal(true);
      expect(p.trust('fd12:3456::1', 0)).to.equal(true);
      expect(p.trust('fe80::1', 0)).to.equal(false);
      expect(p.trust('127.5.5.5', 0)).to.equal(true); // loopback: 127.0.0.1/8
      expect(p.trust('::ffff:192.168.1.1', 0)).to.equal(true); // an IPv4-mapped peer matches its IPv4 block
    });

    it('is empty (nobody) when empty or only separators', () => {
      expect(parseTrustedProxies('')).to.equal(NO_TRUSTED_PROXIES);
      expect(parseTrustedProxies(' , ,')).to.equal(NO_TRUSTED_PROXIES);
      expect(NO_TRUSTED_PROXIES.trust('127.0.0.1', 0)).to.equal(false);
    });

    it('refuses a bad entry, naming it', () => {
      const bad: [string, RegExp][] = [
        ['10.0.0.1, proxy.internal', /"proxy\.internal" is not an IP address/],
        ['10.0.0.0/33', /"10\.0\.0\.0\/33" has a prefix length that is not 1 to 32/],
        ['fd00::/129', /prefix length that is not 1 to 128/],
        ['0.0.0.0/0', /prefix length that is not 1 to 32/],
        ['10.0.0.0/8x', /prefix length/],
        ['10.0.0.0/255.0.0.0', /prefix length/],
        ['127.1', /"127\.1" is not an IP address/],
        ['fe80::1%eth0', /is not an IP address/],
        ['10.0.0.1:8080', /is not an IP address/],
      ];
      for (const [raw, message] of bad) expect(() => parseTrustedProxies(raw), raw).to.throw(message);
    });

    it('stops the gateway and the query service at start-up with the variable named', () => {
      const env = {
        KAFKA_BROKERS: 'localhost:9092',
        CLICKHOUSE_URL: 'http://localhost:8123',
        DATABASE_URL: 'postgres://svc:pw@localhost:5432/telemetry',
      };
      for (const load of [loadGatewayConfig, loadQueryConfig]) {
        let err: unknown;
        try {
          load({ ...env, TRUSTED_PROXIES: '10.0.0.0/8, nonsense' });
        } catch (e) {
          err = e;
        }
        expect(err).to.be.instanceOf(ConfigError);
        expect(String(err)).to.match(/TRUSTED_PROXIES entry "nonsense" is not an IP address/);
      }
      expect(loadGatewayConfig(env).trustedProxies).to.equal(NO_TRUSTED_PROXIES);
      expect(loadGatewayConfig({ ...env, TRUSTED_PROXIES: '10.0.0.0/8' }).trustedProxies.entries).to.deep.equal([
        '10.0.0.0/8',
      ]);
    });
  });

  describe('normalizeIp', () => {
    it('keeps IPv4, unmaps IPv4-mapped IPv6, shortens IPv6 and drops a zone id', () => {
      expect(normalizeIp('81.2.69.142')).to.equal('81.2.69.142');
      expect(normalizeIp('::ffff:1.2.3.4')).to.equal('1.2.3.4');
      expect(normalizeIp('::FFFF:7f00:1')).to.equal('127.0.0.1');
      expect(normalizeIp('2001:DB8:0:0:0:0:0:1')).to.equal('2001:db8::1');
      expect(normalizeIp('fe80::1%eth0')).to.equal('fe80::1');
      expect(normalizeIp('::1')).to.equal('::1');
    });

    it('answers undefined for what is not an IP literal', () => {
      for (const bad of [undefined, '', 'unknown', '1.2.3.4:80', '[::1]', '127.1', '1.2.3.256', 'x'.repeat(200)]) {
        expect(normalizeIp(bad), String(bad)).to.equal(undefined);
      }
    });
  });

  describe('the client address', () => {
    const trusted = parseTrustedProxies('127.0.0.1/8, 10.0.0.0/8, fd00::/8');

    it('is the peer when nobody is trusted, whatever X-Forwarded-For says', () => {
      expect(ip(NO_TRUSTED_PROXIES, '127.0.0.1', '203.0.113.7, 81.2.69.142')).to.equal('127.0.0.1');
      expect(ip(NO_TRUSTED_PROXIES, '::ffff:127.0.0.1', '81.2.69.142')).to.equal('127.0.0.1');
    });

    it('is the peer when the peer is not trusted (a spoofed header is ignored)', () => {
      expect(ip(trusted, '198.51.100.9', '81.2.69.142')).to.equal('198.51.100.9');
      expect(ip(trusted, '2001:db8::9', '10.0.0.1')).to.equal('2001:db8::9');
    });

    it("walks right to left through trusted hops to the first untrusted one: the client's claims beyond it are ignored", () => {
      expect(ip(trusted, '127.0.0.1', '203.0.113.7, 81.2.69.142')).to.equal('81.2.69.142');
      expect(ip(trusted, '127.0.0.1', '203.0.113.7, 81.2.69.142, 10.1.2.3')).to.equal('81.2.69.142');
      expect(ip(trusted, '::ffff:10.0.0.5', '81.2.69.142,10.9.9.9')).to.equal('81.2.69.142');
      expect(ip(trusted, 'fd00::1', '2001:DB8::7')).to.equal('2001:db8::7');
      expect(ip(trusted, '127.0.0.1', '::ffff:81.2.69.142')).to.equal('81.2.69.142');
      // Every hop trusted: the leftmost entry is the client.
      expect(ip(trusted, '127.0.0.1', '10.0.0.7, 10.0.0.8')).to.equal('10.0.0.7');
    });

    it('is the peer when no header came through a trusted peer', () => {
      expect(ip(trusted, '127.0.0.1')).to.equal('127.0.0.1');
      expect(ip(trusted, '127.0.0.1', '')).to.equal('127.0.0.1');
    });

    it('is the peer when the walk reaches a malformed entry through a trusted peer', () => {
      for (const xff of [
        'unknown',
        '81.2.69.142:4711',
        '[2001:db8::1]',
        '81.2.69.142, garbage',
        'x, 10.0.0.2',
        '127.1',
      ]) {
        expect(ip(trusted, '127.0.0.1', xff), xff).to.equal('127.0.0.1');
      }
      // A malformed entry beyond the first untrusted hop is never read.
      expect(ip(trusted, '127.0.0.1', 'garbage, 81.2.69.142')).to.equal('81.2.69.142');
    });

    it('is undefined only when the socket has no peer any more', () => {
      expect(ip(trusted, undefined, '81.2.69.142')).to.equal(undefined);
      expect(ip(NO_TRUSTED_PROXIES, undefined)).to.equal(undefined);
    });
  });

  describe('in an Express app', () => {
    let server: Server;
    let port = 0;
    const seen: { ip: string | undefined; protocol: string }[] = [];
    before(async () => {
      const app = createExpressApp();
      useTrustedProxies(app, parseTrustedProxies('127.0.0.1/8'));
      app.get('/ip', (req, res) => {
        seen.push({ ip: req.ip, protocol: req.protocol });
        res.end();
      });
      server = app.listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      port = (server.address() as AddressInfo).port;
    });
    after(() => new Promise((r) => server.close(r)));

    const get = (headers: Record<string, string>): Promise<void> =>
      new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: '/ip', headers }, (res) => {
          res.resume();
          res.on('end', resolve);
        });
        req.on('error', reject);
        req.end();
      });

    it("makes req.ip the walk's answer and honours X-Forwarded-Proto from a trusted peer", async () => {
      await get({ 'X-Forwarded-For': '203.0.113.7, 81.2.69.142', 'X-Forwarded-Proto': 'https' });
      await get({ 'X-Forwarded-For': 'not-an-address' });
      await get({});
      expect(seen).to.deep.equal([
        { ip: '81.2.69.142', protocol: 'https' },
        { ip: '127.0.0.1', protocol: 'http' },
        { ip: '127.0.0.1', protocol: 'http' },
      ]);
    });
  });

  describe("the gateway's stamp", () => {
    it('carries the address, a printable user agent up to the limit, and ip_storage unless truncated', () => {
      const ua =
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
      const req = (agent?: string): Request =>
        Object.assign(fakeRequest('10.0.0.1', undefined, agent), { ip: '81.2.69.142' });
      expect(stampOf(req(ua), 'truncated')).to.deep.equal({ request_ip: '81.2.69.142', request_user_agent: ua });
      expect(stampOf(req(ua), 'full')).to.deep.equal({
        request_ip: '81.2.69.142',
        request_user_agent: ua,
        ip_storage: 'full',
      });
      expect(stampOf(req(), 'none')).to.deep.equal({ request_ip: '81.2.69.142', ip_storage: 'none' });
      expect(stampOf(req('x'.repeat(513)), 'truncated')).to.deep.equal({ request_ip: '81.2.69.142' });
      expect(stampOf(req('x'.repeat(512)), 'truncated').request_user_agent).to.have.length(512);
      expect(stampOf(req('bad\tagent'), 'truncated')).to.deep.equal({ request_ip: '81.2.69.142' });
      expect(stampOf(req(''), 'truncated')).to.deep.equal({ request_ip: '81.2.69.142' });
    });
  });
});
