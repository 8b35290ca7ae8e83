import { expect } from 'chai';
import { DEFAULT_ICMP_COUNT, monitorTypeModule, type MonitorSettings } from '@telemetry/contract';
import { EgressPolicy } from '@telemetry/platform';
import { DEFAULT_MONITOR, deniedTargets } from '@telemetry/store';
import { icmpProbe } from '../../services/check-runner/src/probes/icmp.js';
import {
  findPing,
  missingPinger,
  parsePingOutput,
  pingArgs,
  systemPinger,
  type PingOutcome,
  type Pinger,
  type PingRequest,
} from '../../services/check-runner/src/probes/ping.js';

// Real output of Debian 12's iputils ping 20221126 (`ping -n -c N -W 0.5 -i 0.2 -4|-6 ADDRESS`),
// the lossy ones taken in a network namespace whose loopback went down during the run.
const V4_OK = `PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.
64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.193 ms
64 bytes from 127.0.0.1: icmp_seq=2 ttl=64 time=0.050 ms
64 bytes from 127.0.0.1: icmp_seq=3 ttl=64 time=0.056 ms

--- 127.0.0.1 ping statistics ---
3 packets transmitted, 3 received, 0% packet loss, time 408ms
rtt min/avg/max/mdev = 0.050/0.099/0.193/0.066 ms
`;
const V6_OK = `PING ::1(::1) 56 data bytes
64 bytes from ::1: icmp_seq=1 ttl=64 time=0.238 ms
64 bytes from ::1: icmp_seq=2 ttl=64 time=0.040 ms
64 bytes from ::1: icmp_seq=3 ttl=64 time=0.053 ms

--- ::1 ping statistics ---
3 packets transmitted, 3 received, 0% packet loss, time 405ms
rtt min/avg/max/mdev = 0.040/0.110/0.238/0.090 ms
`;
const V4_PARTIAL = `PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.
64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.259 ms
64 bytes from 127.0.0.1: icmp_seq=2 ttl=64 time=0.047 ms
64 bytes from 127.0.0.1: icmp_seq=3 ttl=64 time=0.047 ms

--- 127.0.0.1 ping statistics ---
6 packets transmitted, 3 received, 50% packet loss, time 1017ms
rtt min/avg/max/mdev = 0.047/0.117/0.259/0.099 ms
`;
const V6_PARTIAL = `PING ::1(::1) 56 data bytes
64 bytes from ::1: icmp_seq=1 ttl=64 time=0.036 ms
64 bytes from ::1: icmp_seq=2 ttl=64 time=0.061 ms
64 bytes from ::1: icmp_seq=3 ttl=64 time=0.045 ms

--- ::1 ping statistics ---
6 packets transmitted, 3 received, 50% packet loss, time 1018ms
rtt min/avg/max/mdev = 0.036/0.047/0.061/0.010 ms
`;
const ALL_LOST = `PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.

--- 127.0.0.1 ping statistics ---
3 packets transmitted, 0 received, 100% packet loss, time 407ms

`;
// iputils' summary with ICMP errors (Destination Host Unreachable) and a duplicate reply.
const ERRORS = `PING 10.0.0.9 (10.0.0.9) 56(84) bytes of data.
From 10.0.0.1 icmp_seq=1 Destination Host Unreachable
From 10.0.0.1 icmp_seq=2 Destination Host Unreachable
From 10.0.0.1 icmp_seq=3 Destination Host Unreachable

--- 10.0.0.9 ping statistics ---
3 packets transmitted, 0 received, +3 errors, 100% packet loss, time 2046ms
pipe 3
`;
const DUPLICATES = `PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.
64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.100 ms
64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.300 ms (DUP!)
64 bytes from 127.0.0.1: icmp_seq=2 ttl=64 time=0.200 ms

--- 127.0.0.1 ping statistics ---
2 packets transmitted, 2 received, +1 duplicates, 0% packet loss, time 201ms
rtt min/avg/max/mdev = 0.100/0.200/0.300/0.081 ms
`;
// Killed before its summary (SIGKILL): only the replies it printed.
const KILLED = `PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.
64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.100 ms
64 bytes from 127.0.0.1: icmp_seq=2 ttl=64 time=0.300 ms
`;
// What ping printed (on stdout: nothing) when it could not send: no route, no permission.
const NOTHING = '';

describe('ping output (unit, real iputils outputs)', () => {
  it('reads an IPv4 and an IPv6 run where every reply came back', () => {
    expect(parsePingOutput(V4_OK)).to.deep.equal({
      sent: 3,
      received: 3,
      rttMinMs: 0.05,
      rttAvgMs: 0.099,
      rttMaxMs: 0.193,
    });
    expect(parsePingOutput(V6_OK)).to.deep.equal({
      sent: 3,
      received: 3,
      rttMinMs: 0.04,
      rttAvgMs: 0.11,
      rttMaxMs: 0.238,
    });
  });

  it('reads partial loss in both families', () => {
    expect(parsePingOutput(V4_PARTIAL)).to.deep.include({ sent: 6, received: 3, rttAvgMs: 0.117 });
    expect(parsePingOutput(V6_PARTIAL)).to.deep.include({ sent: 6, received: 3, rttAvgMs: 0.047 });
  });

  it('reads a run where nothing came back, with and without ICMP errors: no round trips', () => {
    expect(parsePingOutput(ALL_LOST)).to.deep.equal({ sent: 3, received: 0 });
    expect(parsePingOutput(ERRORS)).to.deep.equal({ sent: 3, received: 0 });
  });

  it('counts a duplicate reply once', () => {
    expect(parsePingOutput(DUPLICATES)).to.deep.include({ sent: 2, received: 2, rttAvgMs: 0.2 });
  });

  it('falls back on the replies of a run killed before its summary, and knows nothing of one that printed nothing', () => {
    expect(parsePingOutput(KILLED)).to.deep.equal({
      sent: 2,
      received: 2,
      rttMinMs: 0.1,
      rttAvgMs: 0.2,
      rttMaxMs: 0.3,
    });
    expect(parsePingOutput(NOTHING)).to.equal(undefined);
    expect(parsePingOutput('ping: connect: Network is unreachable\n')).to.equal(undefined);
  });

  it("reads busybox's summary lines too", () => {
    const busybox = `PING 127.0.0.1 (127.0.0.1): 56 data bytes
64 bytes from 127.0.0.1: seq=0 ttl=64 time=0.061 ms

--- 127.0.0.1 ping statistics ---
1 packets transmitted, 1 packets received, 0% packet loss
round-trip min/avg/max = 0.061/0.061/0.061 ms
`;
    expect(parsePingOutput(busybox)).to.deep.equal({
      sent: 1,
      received: 1,
      rttMinMs: 0.061,
      rttAvgMs: 0.061,
      rttMaxMs: 0.061,
    });
  });

  it('runs ping with an argument array: numeric, the family, the count, the waits, the address after --', () => {
    expect(pingArgs({ address: '::1', family: 6, count: 5, waitMs: 1500, intervalMs: 200 })).to.deep.equal([
      '-n',
      '-6',
      '-c',
      '5',
      '-W',
      '1.500',
      '-i',
      '0.200',
      '--',
      '::1',
    ]);
    // -W 0 is "for ever" to iputils: never below 0.1 s.
    expect(pingArgs({ address: '127.0.0.1', family: 4, count: 1, waitMs: 0, intervalMs: 200 })).to.include('0.100');
  });
});

/** A pinger of our own: counts what it was asked, sends nothing. */
class FakePinger implements Pinger {
  readonly asked: Omit<PingRequest, 'signal'>[] = [];
  constructor(private readonly outcome: PingOutcome) {}
  ping(req: PingRequest): Promise<PingOutcome> {
    const { signal: _signal, ...rest } = req;
    this.asked.push(rest);
    return Promise.resolve(this.outcome);
  }
}

const monitor = (url: string, over: Partial<MonitorSettings> = {}): MonitorSettings => ({
  ...DEFAULT_MONITOR,
  type: 'icmp',
  name: 'ping',
  url,
  icmp_count: 3,
  timeout_ms: 3000,
  ...over,
});

const context = (policy: EgressPolicy) => ({
  userAgent: 'test',
  checkId: 'chk',
  monitorId: 'mon',
  maxBodyBytes: 1024,
  policy,
});
const every: PingOutcome = {
  ok: true,
  aborted: false,
  sent: 3,
  received: 3,
  rttMinMs: 0.05,
  rttAvgMs: 0.1,
  rttMaxMs: 0.2,
};

describe('icmp probe (unit, a pinger of our own)', () => {
  const denyAll = new EgressPolicy();
  const loopback = new EgressPolicy({ allow: ['127.0.0.1/32'] });

  it('pings no address the egress policy denies: an IP literal, or a name that resolves to one', async () => {
    for (const url of ['icmp://127.0.0.1', 'icmp://127.1', 'icmp://[::1]', 'icmp://localhost']) {
      const pinger = new FakePinger(every);
      const r = await icmpProbe(pinger)(monitor(url), context(denyAll));
      expect(r, url).to.deep.include({ status: 'down', error: 'target_not_allowed', response_time: 0 });
      expect(pinger.asked, url).to.have.length(0);
    }
  });

  it('an address allowed by a host:port pair is not allowed a ping: ICMP has no port', async () => {
    const pinger = new FakePinger(every);
    const r = await icmpProbe(pinger)(
      monitor('icmp://127.0.0.1'),
      context(new EgressPolicy({ allow: ['127.0.0.1:80'] })),
    );
    expect(r.error).to.equal('target_not_allowed');
    expect(pinger.asked).to.have.length(0);
  });

  it('pings the address a name resolves to, never the name, with the monitor’s count', async () => {
    const pinger = new FakePinger(every);
    const r = await icmpProbe(pinger)(monitor('icmp://localhost', { icmp_count: 3 }), context(loopback));
    expect(pinger.asked).to.have.length(1);
    expect(pinger.asked[0]).to.deep.include({ address: '127.0.0.1', family: 4, count: 3, intervalMs: 200 });
    expect(r).to.deep.include({ status: 'up', response_time: 0.1 });
    expect(r.timings).to.deep.equal({
      packets: { sent: 3, received: 3, loss_percent: 0, rtt_min_ms: 0.05, rtt_avg_ms: 0.1, rtt_max_ms: 0.2 },
    });
  });

  it('partial loss is degraded, total loss down with packet_loss, a slow average degraded', async () => {
    const partial = await icmpProbe(new FakePinger({ ...every, sent: 6, received: 4 }))(
      monitor('icmp://127.0.0.1'),
      context(loopback),
    );
    expect(partial).to.deep.include({ status: 'degraded', response_time: 0.1, detail: '2 of 6 packets lost (33.33%)' });
    expect(partial.error).to.equal(undefined);
    const lost = await icmpProbe(new FakePinger({ ok: true, aborted: false, sent: 3, received: 0 }))(
      monitor('icmp://127.0.0.1'),
      context(loopback),
    );
    expect(lost).to.deep.include({ status: 'down', error: 'packet_loss' });
    expect(lost.timings).to.deep.equal({ packets: { sent: 3, received: 0, loss_percent: 100 } });
    const slow = await icmpProbe(new FakePinger({ ...every, rttAvgMs: 80 }))(
      monitor('icmp://127.0.0.1', { degraded_threshold_ms: 50 }),
      context(loopback),
    );
    expect(slow).to.deep.include({ status: 'degraded', response_time: 80 });
  });

  it('no ping program, or none allowed to send: down with network and why', async () => {
    const r = await icmpProbe(missingPinger('/nowhere/ping'))(monitor('icmp://127.0.0.1'), context(loopback));
    expect(r).to.deep.include({ status: 'down', error: 'network' });
    expect(r.detail).to.match(/RUNNER_PING_PATH/);
  });
});

describe('system ping (unit, loopback only)', () => {
  it('finds ping in PATH, and nothing where there is none', async () => {
    expect(await findPing('ping')).to.match(/\/ping$/);
    expect(await findPing('/nonexistent/ping')).to.equal(undefined);
    expect(await findPing('ping', '/nonexistent')).to.equal(undefined);
  });

  it('pings 127.0.0.1 and ::1: every reply, round trips above zero', async function () {
    this.timeout(10_000);
    const path = (await findPing('ping'))!;
    for (const [address, family] of [
      ['127.0.0.1', 4],
      ['::1', 6],
    ] as const) {
      const out = await systemPinger(path).ping({
        address,
        family,
        count: 2,
        waitMs: 1000,
        intervalMs: 200,
        signal: new AbortController().signal,
      });
      expect(out, address).to.deep.include({ ok: true, aborted: false, sent: 2, received: 2 });
      expect((out as { rttAvgMs: number }).rttAvgMs, address).to.be.greaterThan(0);
    }
  });

  it('stops at the abort and keeps what it saw until then', async function () {
    this.timeout(10_000);
    const path = (await findPing('ping'))!;
    const abort = new AbortController();
    const started = Date.now();
    setTimeout(() => abort.abort(), 500);
    const out = await systemPinger(path).ping({
      address: '127.0.0.1',
      family: 4,
      count: 20,
      waitMs: 1000,
      intervalMs: 200,
      signal: abort.signal,
    });
    expect(Date.now() - started).to.be.lessThan(2500);
    expect(out.ok && out.aborted).to.equal(true);
    expect((out as { received: number }).received).to.be.within(1, 19);
  });
});

describe('icmp monitor type (unit)', () => {
  const icmp = monitorTypeModule('icmp');
  const problems = (s: MonitorSettings) => icmp.problems(s, new URL(s.url));

  it('takes icmp://host, an IP literal or a name, and nothing else', () => {
    for (const url of ['icmp://127.0.0.1', 'icmp://[::1]', 'icmp://example.test', 'icmp://127.1']) {
      expect(problems(monitor(url)), url).to.deep.equal([]);
    }
    for (const url of ['icmp://127.0.0.1:80', 'icmp://host/path', 'icmp://host?x=1', 'icmp://u@host', 'http://host']) {
      expect(problems(monitor(url)), url).to.deep.include({ path: '/url', message: icmp.urlForm });
    }
    expect(icmp.defaults.icmp_count).to.equal(DEFAULT_ICMP_COUNT);
  });

  it('refuses more packets than its timeout fits', () => {
    expect(problems(monitor('icmp://127.0.0.1', { icmp_count: 20, timeout_ms: 1000 }))).to.deep.equal([
      { path: '/icmp_count', message: '20 packets 200 ms apart need a timeout_ms of at least 4300' },
    ]);
    expect(problems(monitor('icmp://127.0.0.1', { icmp_count: 20, timeout_ms: 4300 }))).to.deep.equal([]);
  });

  it('an IP literal is judged at creation as the address it stands for, a name when the check runs', () => {
    expect(icmp.targets(monitor('icmp://127.1'))).to.deep.equal([{ path: '/url', address: '127.0.0.1', port: 0 }]);
    expect(icmp.targets(monitor('icmp://[::1]'))).to.deep.equal([{ path: '/url', address: '::1', port: 0 }]);
    expect(icmp.targets(monitor('icmp://localhost'))).to.deep.equal([]);
    expect(deniedTargets(monitor('icmp://127.1'), new EgressPolicy())).to.have.length(1);
    expect(deniedTargets(monitor('icmp://127.1'), new EgressPolicy({ allow: ['127.0.0.0/8'] }))).to.deep.equal([]);
    expect(deniedTargets(monitor('icmp://localhost'), new EgressPolicy())).to.deep.equal([]);
  });
});
