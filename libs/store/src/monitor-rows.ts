import type { Monitor } from '@telemetry/contract';
import { DEFAULT_TENANT, withDefaults } from '@telemetry/contract';
import type { SecretBox } from '@telemetry/platform';
import { shownSecrets } from './monitor-view.js';

/**
 * How a monitor is stored (in PostgreSQL's `monitors` table, and before that in
 * ClickHouse's): `spec`, the settings as JSON with every secret masked, and `sealed`,
 * the secrets (header values, the URL, webhook URLs, the webhook secret, the values of
 * `variables`) sealed with
 * SECRETS_KEYS (AES-256-GCM), bound to the monitor's tenant and id.
 */

/**
 * A monitor as stored: its tenant, its webhook signing secret and its row version. Its
 * `key` (docs/as-code.md) is the registry's `config_key` column, not part of `spec`.
 */
export interface StoredMonitor extends Omit<Monitor, 'status' | 'last_check_at'> {
  tenant_id: string;
  webhook_secret: string;
  version: number;
}

/**
 * What `sealed` holds: the secrets that `spec` shows masked. `webhooks` is absent in
 * rows sealed before webhook URLs were secrets: theirs are in `spec`. `variables`
 * (api_flow and browser monitors) is absent in rows sealed before they existed: theirs
 * are the default, none.
 */
interface Sealed {
  url: string;
  headers: Record<string, string>;
  webhook_secret: string;
  webhooks?: string[];
  variables?: Record<string, string>;
}

/**
 * In `spec` of rows whose webhook URLs are sealed (and shown there as scheme and host):
 * a row without it is re-sealed at start.
 */
const WEBHOOKS_SEALED = 'webhooks_sealed';
export const WEBHOOKS_SEALED_MARK = `"${WEBHOOKS_SEALED}":true`;

/** `spec` and `sealed` of a monitor. */
export function sealMonitor(m: Omit<StoredMonitor, 'version'>, box: SecretBox): { spec: string; sealed: string } {
  const secrets: Sealed = {
    url: m.url,
    headers: m.headers,
    webhook_secret: m.webhook_secret,
    webhooks: m.webhooks,
    variables: m.variables,
  };
  const { key: _key, ...settings } = m;
  const shown = { ...settings, ...shownSecrets(m), webhook_secret: '', [WEBHOOKS_SEALED]: true };
  return { spec: JSON.stringify(shown), sealed: box.seal(JSON.stringify(secrets), sealContext(m)) };
}

/** The monitor a stored `spec` and `sealed` describe, its secrets open; `key` is its `config_key`. */
export function openMonitor(
  spec: string,
  sealed: string,
  version: number,
  box: SecretBox,
  key: string | null = null,
): StoredMonitor {
  // A setting added since the row was written reads as the schema's default.
  const { [WEBHOOKS_SEALED]: _mark, ...settings } = withDefaults(
    JSON.parse(spec) as Omit<StoredMonitor, 'version' | 'key'> & { [WEBHOOKS_SEALED]?: true },
  );
  const m: StoredMonitor = { ...settings, key, tenant_id: settings.tenant_id ?? DEFAULT_TENANT, version };
  // A row from before sealing (ClickHouse migration 4) holds its secrets in `spec`.
  if (sealed === '') return m;
  const secrets = JSON.parse(box.open(sealed, sealContext(m))) as Sealed;
  return {
    ...m,
    url: secrets.url,
    headers: secrets.headers,
    webhook_secret: secrets.webhook_secret,
    // Sealed before webhook URLs were secrets: they are still in `spec`.
    webhooks: secrets.webhooks ?? m.webhooks,
    // Sealed before variables existed: `spec` has the default (none).
    variables: secrets.variables ?? m.variables,
  };
}

/** Is this row sealed with the key `keyId`, webhook URLs included? */
export function isSealedWith(spec: string, sealed: string, keyId: string): boolean {
  return sealed.startsWith(`v1.${keyId}.`) && spec.includes(WEBHOOKS_SEALED_MARK);
}

/** What a monitor's sealed secrets are bound to: they open only on that monitor's row. */
function sealContext(m: Pick<StoredMonitor, 'tenant_id' | 'id'>): string {
  return `monitors/${m.tenant_id}/${m.id}`;
}

export function toUnixSeconds(iso: string): number {
  return Math.floor(Date.parse(iso) / 1000);
}
