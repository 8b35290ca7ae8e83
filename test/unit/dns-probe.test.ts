import { expect } from 'chai';
import { EgressPolicy } from '@telemetry/platform';
import { DEFAULT_MONITOR } from '@telemetry/store';
import type { MonitorSettings } from '@telemetry/contract';
import { dnsProbe } from '../../services/check-runner/src/probes/dns.js';
import { TestDnsServer } from '../support/dns-server.js';

/**
 * A dns check through the runner's own resolver, aimed at the loopback test DNS server:
 * a name whose answer holds a denied address and a name that does not exist must read
 * the same, so that a monitor cannot map the names of the runner's private network.
 */
describe('dns probe (unit, a loopback DNS server)', () => {
  const dns = new TestDnsServer();
  const policy = new EgressPolicy();
  const monitor = (name: string, over: Partial<MonitorSettings> = {}): MonitorSettings => ({
    ...DEFAULT_MONITOR,
    type: 'dns',
    name: 'dns',
    url: `dns://${name}`,
    dns_record_type: 'A',
    timeout_ms: 2000,
    ...over,
  });

  before(async () => {
    await dns.start();
    dns.records.set('public.test', { A: ['93.184.216.34'] });
    dns.records.set('db.internal.test', { A: ['10.0.0.5'] });
    dns.records.set('mixed.internal.test', { A: ['93.184.216.35', '169.254.169.254'] });
    dns.records.set('nothing.test', { TXT: ['v=spf1 -all'] });
  });
  after(() => dns.stop());

  const check = (name: string, over: Partial<MonitorSettings> = {}) =>
    dnsProbe(monitor(name, over), {
      userAgent: 'test',
      checkId: 'chk',
      monitorId: 'mon',
      maxBodyBytes: 1024,
      policy,
      dnsServers: [`127.0.0.1:${dns.port}`],
    });

  it('answers a private answer exactly as a missing name: down, error dns, timed', async () => {
    const before = dns.questions;
    expect(await check('public.test')).to.include({ status: 'up' });
    const missing = await check('missing.test');
    const shapeOf = (r: object) => Object.keys(r).sort();
    for (const name of ['db.internal.test', 'mixed.internal.test', 'nothing.test']) {
      for (const expected of [[], ['10.0.0.5']]) {
        const r = await check(name, { dns_expected: expected });
        expect({ ...r, response_time: 0 }, name).to.deep.equal({ ...missing, response_time: 0 });
        expect(shapeOf(r), name).to.deep.equal(shapeOf(missing));
        expect(r.response_time, `${name}: timed like a missing name, not 0`).to.be.greaterThan(0);
      }
    }
    expect(missing).to.include({ status: 'down', status_code: 0, error: 'dns' });
    expect(missing.response_time).to.be.greaterThan(0);
    expect(dns.questions - before, 'every check asked the server once').to.equal(8);
  });
});
