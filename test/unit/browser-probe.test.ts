import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createLogger, EgressPolicy } from '@telemetry/platform';
import { DEFAULT_MONITOR, type StoredMonitor } from '@telemetry/store';
import { BrowserBusyError, BrowserPool, CHROMIUM_ARGS } from '../../services/check-runner/src/browser-pool.js';
import { browserProbeWith, scrub } from '../../services/check-runner/src/probes/browser.js';

const monitor = {
  ...DEFAULT_MONITOR,
  id: 'm',
  tenant_id: 't',
  type: 'browser',
  url: 'http://127.0.0.1:1/',
} as StoredMonitor;
const ctx = { userAgent: 'u', checkId: 'c', monitorId: 'm', maxBodyBytes: 1024, policy: new EgressPolicy() };

describe('browser probe and pool (unit, no browser launched)', () => {
  it('says so when the runner has no browser (it never owns a browser monitor anyway)', async () => {
    const r = await browserProbeWith(undefined)(monitor, ctx);
    expect(r).to.include({
      status: 'down',
      error: 'network',
      detail: 'this runner has no browser (RUNNER_CHROMIUM_PATH)',
    });
  });

  it('shows variable values, as typed and percent-encoded, as ****', () => {
    const vars = { password: 'p@ss word', pin: '12' };
    expect(scrub('typed p@ss word, sent p%40ss%20word, pin 12', vars)).to.equal('typed ****, sent ****, pin 12');
    // The same redaction as api_flow's: JSON-escaped once and twice too.
    expect(scrub('saw "p\\"w0rd" in {\\"p\\":\\"p\\\\\\"w0rd\\"}', { password: 'p"w0rd' })).to.equal(
      'saw "****" in {\\"p\\":\\"****\\"}',
    );
  });

  it('keeps Chromium off the network around the interception', () => {
    expect(CHROMIUM_ARGS).to.include.members([
      '--proxy-server=http://127.0.0.1:9',
      '--proxy-bypass-list=<-loopback>',
      '--host-resolver-rules=MAP * ~NOTFOUND',
      '--webrtc-ip-handling-policy=disable_non_proxied_udp',
    ]);
  });

  it('refuses a check when the runner is stopping', async () => {
    const logger = createLogger({ service: 'test', level: 'silent' });
    const pool = new BrowserPool({ executablePath: '/nonexistent', concurrency: 1, logger, registry: new Registry() });
    await pool.stop();
    let err: unknown;
    await pool.withContext(100, () => Promise.resolve()).catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(BrowserBusyError);
    const r = await browserProbeWith(pool)(monitor, ctx);
    expect(r).to.include({ status: 'down', error: 'timeout', detail: 'the runner is stopping' });
  });
});
