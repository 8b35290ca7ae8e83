import { createHmac, timingSafeEqual } from 'node:crypto';
import { HEARTBEAT_TOKEN_PATTERN } from '@telemetry/contract';
import { Mirror, refuseDocumentedExample, v, type PgQueryable } from '@telemetry/platform';

/**
 * Heartbeat tokens (docs/monitors.md, "Heartbeat monitors"). A heartbeat monitor's job
 * calls POST /api/heartbeats/{token} on the gateway. The token names the monitor and
 * its tenant and carries an HMAC-SHA256 of both and of the monitor's nonce (PostgreSQL's
 * `heartbeat_tokens`) under HEARTBEAT_KEY, which the query service (it shows the token)
 * and the gateway (it checks it) share. The gateway checks a call against its copy of the
 * nonces, kept current by the change feed: a deleted monitor's token, or one replaced
 * (POST /api/monitors/{id}/heartbeat-token), is refused within a second. Monitors copied
 * from ClickHouse have the nonce '' and keep their old token until it is replaced.
 * Changing HEARTBEAT_KEY changes every token.
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

function mac(key: string, tenantId: string, monitorId: string, nonce: string): string {
  const text = nonce === '' ? `heartbeat\n${tenantId}\n${monitorId}` : `heartbeat\n${tenantId}\n${monitorId}\n${nonce}`;
  return createHmac('sha256', key).update(text).digest('hex').slice(0, 32);
}

/** The token of a heartbeat monitor (`ten_x`, `mon_<16 hex>`) with its nonce. */
export function heartbeatToken(key: string, tenantId: string, monitorId: string, nonce: string): string {
  return `hb_${tenantId.slice('ten_'.length)}_${monitorId.slice('mon_'.length)}_${mac(key, tenantId, monitorId, nonce)}`;
}

/** The change feed's name for heartbeat tokens. */
export const HEARTBEAT_TOKENS_ENTITY = 'heartbeat_tokens';

interface TokenRow {
  monitor_id: string;
  tenant_id: string;
  nonce: string;
}

/**
 * The gateway's copy of the heartbeat nonces (subscribe `mirror` to its change feed):
 * checking a token costs no I/O.
 */
export class HeartbeatTokens {
  readonly mirror: Mirror<TokenRow>;

  constructor(db: PgQueryable) {
    this.mirror = new Mirror<TokenRow>(
      HEARTBEAT_TOKENS_ENTITY,
      async (ids) =>
        (ids === undefined
          ? await db.query<TokenRow>('SELECT monitor_id, tenant_id, nonce FROM heartbeat_tokens')
          : await db.query<TokenRow>(
              'SELECT monitor_id, tenant_id, nonce FROM heartbeat_tokens WHERE monitor_id = ANY($1::text[])',
              [ids],
            )
        ).rows,
      (r) => r.monitor_id,
    );
  }

  /** The monitor a token names, when it exists, is a heartbeat monitor and the MAC is right (constant time). */
  verify(key: string, token: string): { tenantId: string; monitorId: string } | undefined {
    if (key === '' || token.length > 100 || !TOKEN.test(token)) return undefined;
    const [, tenant, monitor, given] = token.split('_') as [string, string, string, string];
    const tenantId = `ten_${tenant}`;
    const monitorId = `mon_${monitor}`;
    const row = this.mirror.get(monitorId);
    // Compared also when the monitor is unknown, so both paths cost the same.
    const expected = Buffer.from(mac(key, tenantId, monitorId, row?.nonce ?? 'unknown'), 'hex');
    const equal = timingSafeEqual(expected, Buffer.from(given, 'hex'));
    return equal && row !== undefined && row.tenant_id === tenantId ? { tenantId, monitorId } : undefined;
  }
}
