import { createHmac, timingSafeEqual } from 'node:crypto';
import { HEARTBEAT_TOKEN_PATTERN } from '@telemetry/contract';
import { refuseDocumentedExample, v } from '@telemetry/platform';

/**
 * Heartbeat tokens (docs/monitors.md, "Heartbeat monitors"). A heartbeat monitor's job
 * calls POST /api/heartbeats/{token} on the gateway. The token names the monitor and
 * its tenant and carries an HMAC-SHA256 of both under HEARTBEAT_KEY, which the query
 * service (it shows the token) and the gateway (it checks it) share: the gateway checks
 * a call with no lookup and no access to the registry, and a token cannot be made for
 * another monitor without the key. Changing HEARTBEAT_KEY changes every token.
 */
export const heartbeatSpec = {
  heartbeatKey: v.secret(
    'HEARTBEAT_KEY',
    '',
    'key of the heartbeat tokens, shared by the gateway and the query service (at least 32 characters, e.g. $(openssl rand -hex 32); the published examples, which say replace-me, are refused); empty: heartbeat monitors are refused',
    (raw) => {
      if (raw !== '' && raw.length < 32) throw new Error('must be at least 32 characters');
      refuseDocumentedExample(raw);
    },
  ),
};

const TOKEN = new RegExp(HEARTBEAT_TOKEN_PATTERN);

function mac(key: string, tenantId: string, monitorId: string): string {
  return createHmac('sha256', key).update(`heartbeat\n${tenantId}\n${monitorId}`).digest('hex').slice(0, 32);
}

/** The token of a heartbeat monitor (`ten_x`, `mon_<16 hex>`). */
export function heartbeatToken(key: string, tenantId: string, monitorId: string): string {
  return `hb_${tenantId.slice('ten_'.length)}_${monitorId.slice('mon_'.length)}_${mac(key, tenantId, monitorId)}`;
}

/** The monitor a token names, when its MAC is right (compared in constant time); else undefined. */
export function verifyHeartbeatToken(key: string, token: string): { tenantId: string; monitorId: string } | undefined {
  if (key === '' || token.length > 100 || !TOKEN.test(token)) return undefined;
  const [, tenant, monitor, given] = token.split('_') as [string, string, string, string];
  const tenantId = `ten_${tenant}`;
  const monitorId = `mon_${monitor}`;
  const expected = Buffer.from(mac(key, tenantId, monitorId), 'hex');
  return timingSafeEqual(expected, Buffer.from(given, 'hex')) ? { tenantId, monitorId } : undefined;
}
