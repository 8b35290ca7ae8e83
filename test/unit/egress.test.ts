import type { LookupAddress } from 'node:dns';
import { expect } from 'chai';
import {
  egressPolicyFor,
  postgresHostPort,
  embeddedIpv4,
  EgressPolicy,
  parseEgressAllow,
  parsePorts,
} from '@telemetry/platform';
import { silentLogger, until } from './support/fakes.js';

/**
 * The egress policy's address classifier, on IP literals only: nothing here opens a
 * connection (the deny rules for non-loopback ranges are proven on literals).
 */
describe('egress policy (unit)', () => {
  const policy = new EgressPolicy();
  const verdict = (url: string) => policy.checkUrl(new URL(url));

  it('denies every non-public range, in every literal notation', () => {
    const denied = [
      'http://127.0.0.1/',
      'http://2130706433/', // decimal
      'http://127.1/', // short form
      'http://0x7f.1/', // hex
      'http://0177.0.0.1/', // octal
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/', // IPv4-mapped
      'http://[0:0:0:0:0:ffff:7f00:1]/',
      'http://[::127.0.0.2]/', // IPv4-compatible
      'http://[::ffff:0:a9fe:a9fe]/', // IPv4-translated 169.254.169.254
      'http://[64:ff9b::a9fe:a9fe]/', // NAT64 of 169.254.169.254
      'http://[2002:a9fe:a9fe::1]/', // 6to4 of 169.254.169.254
      'http://169.254.169.254/',
      'http://2852039166/', // 169.254.169.254, decimal
      'http://10.0.0.1/',
      'http://172.16.0.1/',
      'http://172.31.255.255/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://0.0.0.0/',
      'http://0/',
      'http://255.255.255.255/',
      'http://224.0.0.1/',
      'http://[::]/',
      'http://[fe80::1]/',
      'http://[fc00::1]/',
      'http://[fd12:3456::1]/',
      'http://[ff02::1]/',
    ];
    for (const url of denied) {
      const v = verdict(url);
      expect(v, url).to.not.equal(undefined);
      expect(v!.allowed, url).to.equal(false);
    }
  });

  it('allows public addresses and leaves names to connect time', () => {
    for (const url of ['http://93.184.216.34/', 'https://[2606:4700:4700::1111]/', 'http://8.8.8.8:53/']) {
      expect(verdict(url), url).to.deep.equal({ allowed: true });
    }
    expect(verdict('http://localhost:9/')).to.equal(undefined);
    expect(verdict('http://metadata.google.internal/')).to.equal(undefined);
    expect(verdict('http://172.32.0.1/')).to.deep.equal({ allowed: true }); // just past 172.16/12
  });

  it('reads the IPv4 address inside IPv6 forms', () => {
    expect(embeddedIpv4('::ffff:127.0.0.1')).to.equal('127.0.0.1');
    expect(embeddedIpv4('::ffff:7f00:1')).to.equal('127.0.0.1');
    expect(embeddedIpv4('64:ff9b::a00:1')).to.equal('10.0.0.1');
    expect(embeddedIpv4('2002:0a00:0001::')).to.equal('10.0.0.1');
    expect(embeddedIpv4('::1')).to.equal(undefined);
    expect(embeddedIpv4('::')).to.equal(undefined);
    expect(embeddedIpv4('2606:4700::1111')).to.equal(undefined);
  });

  it('allows what the operator allows: ranges, and single address:port pairs (in any notation)', () => {
    const p = new EgressPolicy({ allow: ['10.1.0.0/16', '127.0.0.1:8080', '[::1]:9000'] });
    expect(p.check('10.1.2.3', 80).allowed).to.equal(true);
    expect(p.check('10.2.0.1', 80).allowed).to.equal(false);
    expect(p.check('127.0.0.1', 8080).allowed).to.equal(true);
    expect(p.check('127.0.0.1', 8081).allowed).to.equal(false);
    expect(p.check('::ffff:127.0.0.1', 8080).allowed).to.equal(true);
    expect(p.checkUrl(new URL('http://2130706433:8080/'))!.allowed).to.equal(true);
    expect(p.check('::1', 9000).allowed).to.equal(true);
    expect(p.check('::1', 9001).allowed).to.equal(false);
  });

  it('denies our own services whatever is allowed', () => {
    const p = new EgressPolicy({ allow: ['127.0.0.0/8'], alwaysDeny: [{ address: '127.0.0.1', port: 8123 }] });
    expect(p.check('127.0.0.1', 8123)).to.include({ allowed: false });
    expect(p.checkUrl(new URL('http://[::ffff:127.0.0.1]:8123/'))).to.include({ allowed: false });
    expect(p.check('127.0.0.1', 8124).allowed).to.equal(true);
  });

  it('resolves a name once and pins the first allowed address, or fails with EGRESS_DENIED', async () => {
    const fake =
      (addresses: LookupAddress[]) =>
      (_host: string, _opts: object, cb: (err: Error | null, a: LookupAddress[]) => void): void =>
        cb(null, addresses);
    const lookup = (addresses: LookupAddress[], all: boolean) =>
      new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
        policy.pinnedLookup(443, fake(addresses) as never)('example.test', { all }, (err, address) =>
          resolve({ err, address }),
        ),
      );
    const mixed = [
      { address: '10.0.0.5', family: 4 },
      { address: '93.184.216.34', family: 4 },
    ];
    expect((await lookup(mixed, false)).address).to.equal('93.184.216.34');
    expect((await lookup(mixed, true)).address).to.deep.equal([{ address: '93.184.216.34', family: 4 }]);
    const rebound = await lookup([{ address: '169.254.169.254', family: 4 }], true);
    expect(rebound.err?.code).to.equal('EGRESS_DENIED');
    const mapped = await lookup([{ address: '::ffff:127.0.0.1', family: 6 }], false);
    expect(mapped.err?.code).to.equal('EGRESS_DENIED');
  });

  it('refuses a malformed EGRESS_ALLOW', () => {
    expect(parseEgressAllow('10.0.0.0/8, 127.0.0.1:8080')).to.deep.equal(['10.0.0.0/8', '127.0.0.1:8080']);
    expect(parseEgressAllow('')).to.deep.equal([]);
    for (const bad of ['10.0.0.0/33', 'example.com', 'localhost:80', '127.0.0.1:0', '::1:80/200']) {
      expect(() => parseEgressAllow(bad), bad).to.throw();
    }
  });

  it('denies the ports of EGRESS_DENY_PORTS on every address, names included, but an allowed address:port pair', () => {
    const p = new EgressPolicy({ allow: ['10.1.0.0/16', '10.2.0.5:25'], denyPorts: [25, 465] });
    expect(p.check('93.184.216.34', 25)).to.deep.equal({
      allowed: false,
      reason: 'port 25 is denied (EGRESS_DENY_PORTS)',
    });
    expect(p.check('93.184.216.34', 465).allowed).to.equal(false);
    expect(p.check('93.184.216.34', 587).allowed).to.equal(true);
    expect(p.check('10.1.0.9', 25).allowed, 'an allowed range is no exception').to.equal(false);
    expect(p.check('10.2.0.5', 25).allowed, 'an allowed pair is').to.equal(true);
    // Judged from the URL alone, before any lookup: a name on a denied port too.
    expect(p.checkUrl(new URL('tcp://mail.example.com:25'))).to.include({ allowed: false });
    expect(p.checkUrl(new URL('http://mail.example.com:465/'))).to.include({ allowed: false });
    expect(p.checkUrl(new URL('http://mail.example.com:587/'))).to.equal(undefined);
    expect(p.checkUrl(new URL('http://93.184.216.34:25/'))).to.include({ allowed: false });
    expect(new EgressPolicy().check('93.184.216.34', 25).allowed, 'no list, no denied port').to.equal(true);
  });

  it('reads EGRESS_DENY_PORTS', () => {
    expect(parsePorts('25')).to.deep.equal([25]);
    expect(parsePorts(' 25, 465,25 ')).to.deep.equal([25, 465]);
    expect(parsePorts('')).to.deep.equal([]);
    for (const bad of ['0', '65536', 'smtp', '25-30', '-1', '2.5']) expect(() => parsePorts(bad), bad).to.throw();
  });

  it("takes the registry's host and port from DATABASE_URL, 5432 when it names none, never its credentials", () => {
    expect(postgresHostPort('postgres://u:p@db.internal/telemetry')).to.equal('db.internal:5432');
    expect(postgresHostPort('postgresql://u:p@[::1]:6543/telemetry')).to.equal('[::1]:6543');
  });

  it('resolves our own services again on its timer, keeping the last addresses of a name that fails', async () => {
    let answer: LookupAddress[] | undefined = [{ address: '127.0.9.1', family: 4 }];
    let asked = 0;
    const lookup = (_host: string, _opts: object, cb: (err: Error | null, a: LookupAddress[]) => void): void => {
      asked++;
      if (answer) cb(null, answer);
      else cb(Object.assign(new Error('queryA ESERVFAIL'), { code: 'ESERVFAIL' }), []);
    };
    const config = {
      egressAllow: ['127.0.0.0/8'],
      egressDenyPorts: [],
      egressRefreshMs: 10,
      kafkaBrokers: ['kafka.internal:9092'],
      clickhouseUrl: 'http://127.0.8.1:8123',
      databaseUrl: 'postgres://svc:secret@127.0.7.1:6543/telemetry',
    };
    const { policy, refresh } = await egressPolicyFor(config, silentLogger, [], lookup as never);
    expect(policy.check('127.0.9.1', 9092).allowed, 'Kafka as resolved at start').to.equal(false);
    expect(policy.check('127.0.8.1', 8123).allowed, 'ClickHouse, a literal').to.equal(false);
    expect(policy.check('127.0.7.1', 6543).allowed, 'PostgreSQL, a literal').to.equal(false);
    expect(policy.check('127.0.7.1', 6544).allowed, 'only its port').to.equal(true);
    expect(policy.check('127.0.9.2', 9092).allowed).to.equal(true);
    // Kafka comes back at another address.
    answer = [{ address: '127.0.9.2', family: 4 }];
    await refresh.start();
    try {
      await until(() => !policy.check('127.0.9.2', 9092).allowed, 'the new address denied');
      expect(policy.check('127.0.9.1', 9092).allowed, 'the old one no longer ours').to.equal(true);
      // The name stops resolving: its last addresses stay denied.
      answer = undefined;
      const before = asked;
      await until(() => asked > before + 2, 'resolved again');
      expect(policy.check('127.0.9.2', 9092).allowed).to.equal(false);
      expect(policy.check('127.0.8.1', 8123).allowed).to.equal(false);
      expect(refresh.health()).to.equal(true);
    } finally {
      await refresh.stop();
    }
  });
});
