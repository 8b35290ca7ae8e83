import { expect } from 'chai';
import type { CheckMessage } from '@telemetry/contract';
import {
  createSettings,
  DEFAULT_MONITOR,
  heartbeatToken,
  heartbeatSpec,
  monitorProblems,
  patchSettings,
  quorumOf,
  HeartbeatTokens,
  type StoredMonitor,
} from '@telemetry/store';
import { loadConfig } from '@telemetry/platform';
import { heartbeatProbe } from '../../services/check-runner/src/probes/heartbeat.js';
import { slotVerdict } from '../../services/check-runner/src/quorum.js';
import { checkIdFor } from '../../services/check-runner/src/slots.js';

const KEY = 'k'.repeat(64);
const ID = 'mon_0123456789abcdef';

function check(location: string, status: CheckMessage['status']): CheckMessage {
  return {
    id: `chk_${location}`,
    monitor_id: ID,
    tenant_id: 'ten_a',
    status,
    response_time: 5,
    status_code: status === 'down' ? 500 : 200,
    location,
    created_at: '2026-11-23T10:00:00.000Z',
  };
}

function heartbeatMonitor(over: Partial<StoredMonitor> = {}): StoredMonitor {
  return {
    ...DEFAULT_MONITOR,
    type: 'heartbeat',
    url: `heartbeat://${ID}`,
    heartbeat_grace_seconds: 30,
    interval_seconds: 60,
    tenant_id: 'ten_a',
    key: null,
    id: ID,
    name: 'job',
    webhook_secret: 'whsec_x',
    created_at: '2026-11-23T10:00:00Z',
    updated_at: '2026-11-23T10:00:00Z',
    version: 1,
    ...over,
  };
}

describe('heartbeat monitors and quorum (unit)', () => {
  describe('heartbeat tokens', () => {
    /** The gateway's copy of the nonces, loaded from a fake of our own registry reader. */
    async function tokensWith(
      rows: { monitor_id: string; tenant_id: string; nonce: string }[],
    ): Promise<HeartbeatTokens> {
      const fake = {
        query: (_sql: string, params?: unknown[]) =>
          Promise.resolve({
            rows: params ? rows.filter((r) => (params[0] as string[]).includes(r.monitor_id)) : rows,
          }),
      };
      const tokens = new HeartbeatTokens(fake as never);
      await tokens.mirror.reload();
      return tokens;
    }

    it('names the monitor and its tenant, and only the key makes one that verifies', async () => {
      const nonce = 'f'.repeat(32);
      const tokens = await tokensWith([{ monitor_id: ID, tenant_id: 'ten_acme', nonce }]);
      const verifyHeartbeatToken = (key: string, token: string) => tokens.verify(key, token);
      const token = heartbeatToken(KEY, 'ten_acme', ID, nonce);
      expect(token).to.match(/^hb_acme_0123456789abcdef_[0-9a-f]{32}$/);
      expect(verifyHeartbeatToken(KEY, token)).to.deep.equal({ tenantId: 'ten_acme', monitorId: ID });
      // The token of another nonce (replaced), or of a monitor the registry no longer has: refused.
      expect(verifyHeartbeatToken(KEY, heartbeatToken(KEY, 'ten_acme', ID, 'e'.repeat(32)))).to.equal(undefined);
      expect((await tokensWith([])).verify(KEY, token)).to.equal(undefined);
      // A monitor copied from ClickHouse (nonce ''): its token from before still verifies.
      const legacy = await tokensWith([{ monitor_id: ID, tenant_id: 'ten_acme', nonce: '' }]);
      expect(legacy.verify(KEY, heartbeatToken(KEY, 'ten_acme', ID, ''))).to.deep.equal({
        tenantId: 'ten_acme',
        monitorId: ID,
      });
      // Another key, another monitor or tenant with this MAC, a changed MAC: refused.
      expect(verifyHeartbeatToken('x'.repeat(64), token)).to.equal(undefined);
      expect(verifyHeartbeatToken(KEY, token.replace('_acme_', '_other_'))).to.equal(undefined);
      expect(verifyHeartbeatToken(KEY, token.replace('0123456789abcdef', 'fedcba9876543210'))).to.equal(undefined);
      const flipped = `${token.slice(0, -1)}${token.endsWith('0') ? '1' : '0'}`;
      expect(verifyHeartbeatToken(KEY, flipped)).to.equal(undefined);
      // No key: nothing verifies; malformed tokens are refused before any MAC.
      expect(verifyHeartbeatToken('', token)).to.equal(undefined);
      for (const bad of ['', 'hb_', `${token}0`, token.toUpperCase(), `hb_a_b_c`, 'x'.repeat(5000)]) {
        expect(verifyHeartbeatToken(KEY, bad), bad).to.equal(undefined);
      }
    });

    it('refuses a HEARTBEAT_KEY shorter than 32 characters at start-up, without echoing it', () => {
      let message = '';
      try {
        loadConfig(heartbeatSpec, { HEARTBEAT_KEY: 'short-secret' });
      } catch (err) {
        message = String(err);
      }
      expect(message)
        .to.match(/HEARTBEAT_KEY/)
        .and.not.match(/short-secret/);
      expect(loadConfig(heartbeatSpec, {}).heartbeatKey).to.equal('');
    });
  });

  describe('heartbeat verdict', () => {
    const created = Date.parse('2026-11-23T10:00:00Z');
    const SETTLE = 500;
    const allowed = (60 + 30) * 1000 + SETTLE;

    it('is pending until the first call is due, then down without one', async () => {
      const none = (): Promise<undefined> => Promise.resolve(undefined);
      expect(await heartbeatProbe(heartbeatMonitor(), created + allowed - 1, none, SETTLE)).to.include({
        pending: true,
      });
      const late = await heartbeatProbe(heartbeatMonitor(), created + allowed + 1, none, SETTLE);
      expect(late).to.include({ status: 'down', error: 'heartbeat_missing' });
      expect(late).to.not.have.property('pending');
    });

    it('is up on a call within interval + grace (a stored second counts to its end), down after', async () => {
      const at = '2026-11-23T11:00:00Z';
      const call = { id: 'chk_call', created_at: at };
      const since: number[] = [];
      const last = (_m: StoredMonitor, s: number): Promise<typeof call> => {
        since.push(s);
        return Promise.resolve(call);
      };
      const t = Date.parse(at);
      const up = await heartbeatProbe(heartbeatMonitor(), t + 1000 + allowed - 1, last, SETTLE);
      expect(up).to.deep.include({ status: 'up', stored: call });
      const down = await heartbeatProbe(heartbeatMonitor(), t + 1000 + allowed, last, SETTLE);
      expect(down).to.include({ status: 'down', error: 'heartbeat_missing' });
      // It asks only for calls that could still count.
      expect(since[0]).to.equal(Math.floor((t + 1000 - 1) / 1000));
      // The default grace applies to a monitor without one.
      const noGrace = heartbeatMonitor({ heartbeat_grace_seconds: null });
      expect(await heartbeatProbe(noGrace, t + 1000 + 120_000 + SETTLE - 1, last, SETTLE)).to.include({ status: 'up' });
    });
  });

  describe('quorum', () => {
    const m = { locations: ['eu', 'us', 'ap'], quorum: null };

    it('is a majority of the locations unless set', () => {
      expect(
        [1, 2, 3, 4, 5].map((n) => quorumOf({ locations: Array(n).fill('x') as string[], quorum: null })),
      ).to.deep.equal([1, 2, 2, 3, 3]);
      expect(quorumOf({ locations: ['a', 'b', 'c'], quorum: 1 })).to.equal(1);
    });

    it('fails a slot only when quorum locations fail, named after the first failing location', () => {
      const one = slotVerdict(m, [check('eu', 'up'), check('us', 'down'), check('ap', 'up')]);
      expect([one.check.status, one.check.location, one.down]).to.deep.equal(['up', 'eu', ['us']]);
      const two = slotVerdict(m, [check('ap', 'down'), check('eu', 'up'), check('us', 'down')]);
      expect([two.check.status, two.check.id, two.down]).to.deep.equal(['down', 'chk_us', ['us', 'ap']]);
      // A missing location does not fail; with all the rest failing below the quorum, it passes.
      const missing = slotVerdict(m, [check('eu', 'down')]);
      expect([missing.check.status, missing.missing]).to.deep.equal(['up', ['us', 'ap']]);
      // Degraded is passing, and kept.
      const below = slotVerdict(m, [{ ...check('eu', 'down'), error: 'timeout' }]).check;
      expect([below.status, below.error]).to.deep.equal(['up', undefined]);
      const slow = slotVerdict(m, [check('eu', 'degraded'), check('us', 'up'), check('ap', 'down')]);
      expect(slow.check).to.include({ status: 'degraded', location: 'eu' });
      // A check of a location the monitor does not list is ignored.
      expect(
        slotVerdict({ locations: ['eu'], quorum: null }, [check('eu', 'up'), check('xx', 'down')]).down,
      ).to.deep.equal([]);
    });

    it('gives each location its own check id, and the default location the id it had before locations', () => {
      const ids = ['default', 'eu', 'us'].map((l) => checkIdFor(ID, 60_000, l));
      expect(new Set(ids).size).to.equal(3);
      expect(ids[0]).to.equal(checkIdFor(ID, 60_000));
    });
  });

  describe('registry rules', () => {
    it('gives heartbeat monitors their URL and grace, and keeps quorum within the locations', () => {
      const s = createSettings({ name: 'job', type: 'heartbeat' }, ID);
      expect(s).to.include({ url: `heartbeat://${ID}`, heartbeat_grace_seconds: 60, quorum: null });
      expect(s.locations).to.deep.equal(['default']);
      expect(monitorProblems(s)).to.deep.equal([]);
      // Sent back as read, or another monitor's: its own.
      expect(
        createSettings({ name: 'job', type: 'heartbeat', url: 'heartbeat://mon_ffffffffffffffff' }, ID).url,
      ).to.equal(`heartbeat://${ID}`);
      const paths = (over: object): string[] =>
        monitorProblems({ ...createSettings({ name: 'n', url: 'https://example.com/' }, ID), ...over }).map(
          (p) => p.path,
        );
      expect(paths({ quorum: 2 })).to.deep.equal(['/quorum']);
      expect(paths({ locations: ['a', 'b'], quorum: 2 })).to.deep.equal([]);
      expect(paths({ heartbeat_grace_seconds: 5 })).to.deep.equal(['/heartbeat_grace_seconds']);
      expect(paths({ url: '' })).to.deep.equal(['/url']);
      expect(paths({ type: 'heartbeat', url: 'https://example.com/', locations: ['a', 'b'] })).to.have.members([
        '/url',
        '/locations',
      ]);
      // A PATCH to heartbeat takes the server's URL; away from it needs one.
      const web = { ...createSettings({ name: 'n', url: 'https://example.com/' }, ID), id: ID };
      expect(patchSettings(web, { type: 'heartbeat' }).url).to.equal(`heartbeat://${ID}`);
      const hb = { ...s, id: ID };
      expect(monitorProblems(patchSettings(hb, { type: 'http' })).map((p) => p.path)).to.include('/url');
      expect(patchSettings(hb, { type: 'http' }).heartbeat_grace_seconds).to.equal(null);
    });
  });
});
