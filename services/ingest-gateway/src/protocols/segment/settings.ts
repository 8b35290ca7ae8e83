import type { Request } from 'express';
import { AppError } from '@telemetry/platform';

/** A Host header as host[:port]: a DNS name, an IPv4 literal or a bracketed IPv6 literal. */
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * Where this gateway is, as the browser reached it: the Host header (validated as
 * host[:port], at most 253 characters) and the protocol (`X-Forwarded-Proto` when it is
 * `http` or `https`, as a TLS-terminating proxy sets it; else the connection's own).
 * Only the asking client reads the answer (it is `private`), so a forged header misleads
 * no one else.
 */
export function gatewayOrigin(req: Request): { host: string; protocol: 'http' | 'https' } {
  const host = req.get('host') ?? '';
  if (host.length > 253 + 6 || !HOST.test(host)) {
    throw new AppError('INVALID_PARAMETER', 'the Host header must be host[:port]', { path: 'header:Host' });
  }
  const forwarded = req.get('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase();
  const protocol =
    forwarded === 'http' || forwarded === 'https' ? forwarded : req.protocol === 'https' ? 'https' : 'http';
  return { host, protocol };
}

/**
 * The settings document analytics.js (@segment/analytics-next) loads from
 * `{cdnURL}/v1/projects/{writeKey}/settings` before it sends anything. Only what it reads:
 * - `integrations` holds `Segment.io` alone: with no other integration it loads no
 *   destination script (`hasLegacyDestinations` is true for more than one);
 * - `Segment.io.apiHost` is this gateway's `host[:port]/v1` and `protocol` its protocol: the
 *   segmentio plugin posts to `{protocol}://{apiHost}/{t,i,p,s,g,a}` (`/b` when batching);
 * - `metrics.sampleRate` 0: it sends no metrics (`/m`) anywhere;
 * - `remotePlugins` empty, `enabledMiddleware` empty, no `middlewareSettings.routingRules`,
 *   `legacyVideoPluginsEnabled` false: it loads no plugin, middleware or video script;
 * - `edgeFunction` empty: no edge function (analytics-signals) to download;
 * - `plan` tracks every event (Segment's default for a new source).
 */
export function segmentSettings(writeKey: string, origin: { host: string; protocol: 'http' | 'https' }) {
  const apiHost = `${origin.host}/v1`;
  return {
    integrations: {
      'Segment.io': {
        apiKey: writeKey,
        apiHost,
        protocol: origin.protocol,
        unbundledIntegrations: [],
        addBundledMetadata: true,
        maybeBundledConfigIds: {},
      },
    },
    plan: {
      track: { __default: { enabled: true, integrations: {} } },
      identify: { __default: { enabled: true } },
      group: { __default: { enabled: true } },
    },
    edgeFunction: {},
    analyticsNextEnabled: true,
    middlewareSettings: {},
    enabledMiddleware: {},
    metrics: { sampleRate: 0, host: apiHost },
    legacyVideoPluginsEnabled: false,
    remotePlugins: [],
  };
}
