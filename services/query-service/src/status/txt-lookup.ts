import { Resolver } from 'node:dns/promises';

/**
 * The TXT records of a name, each record's strings joined (a record longer than 255 bytes
 * comes in chunks); [] when the name or its TXT records do not exist. Rejects with
 * TxtLookupError when the resolver did not answer (in time) or failed.
 */
export type TxtLookup = (name: string) => Promise<string[]>;

export class TxtLookupError extends Error {
  constructor(readonly reason: string) {
    super(`the TXT lookup failed: ${reason}`);
    this.name = 'TxtLookupError';
  }
}

/** The resolver's answers that mean "no such record". */
const ABSENT = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * TXT lookups through `server` (DOMAIN_RESOLVER: an IP literal with an optional port; '' for
 * the system's resolver), each given at most `timeoutMs` in all: the resolver is cancelled
 * then. A new resolver per lookup: verifications are rare, and none waits behind another.
 */
export function txtLookup(server: string, timeoutMs: number): TxtLookup {
  return async (name) => {
    const resolver = new Resolver({ timeout: Math.max(50, Math.floor(timeoutMs / 3)), tries: 3 });
    if (server !== '') resolver.setServers([server]);
    const deadline = setTimeout(() => resolver.cancel(), timeoutMs);
    try {
      // Absolute (a final dot): the resolver's search domains (a pod's cluster.local list) are not tried first.
      const absolute = name.endsWith('.') ? name : `${name}.`;
      return (await resolver.resolveTxt(absolute)).map((chunks) => chunks.join(''));
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (typeof code === 'string' && ABSENT.has(code)) return [];
      throw new TxtLookupError(code === 'ECANCELLED' ? `no answer within ${timeoutMs} ms` : String(code ?? err));
    } finally {
      clearTimeout(deadline);
    }
  };
}
