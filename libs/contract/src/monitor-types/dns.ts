import { assertionProblems } from '../assertions.js';
import { ipVersion } from '../urls.js';
import { plainUrlProblems, type MonitorTypeModule } from './module.js';

/**
 * A dns monitor's resolver as an address and a port (53 by default), or undefined when it
 * is not an IP literal with an optional port.
 */
export function resolverAddress(resolver: string): { address: string; port: number } | undefined {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([0-9.]+))(?::(\d{1,5}))?$/.exec(resolver);
  const address = m?.[1] ?? m?.[2];
  const port = m?.[3] === undefined ? 53 : Number(m[3]);
  if (!address || ipVersion(address) === 0 || port < 1 || port > 65_535) return undefined;
  return { address, port };
}

/** A DNS query: the name resolves (to the expected values). Its URL names what to resolve. */
export const dnsType: MonitorTypeModule<'dns'> = {
  type: 'dns',
  label: 'DNS record',
  urlForm: 'a dns monitor checks dns://name (the name to resolve), with nothing else',
  urlHint: 'dns://name',
  fields: ['dns_record_type', 'dns_expected', 'dns_resolver', 'confirm_delay_ms', 'assertions'],
  defaults: { dns_record_type: 'A' },
  problems(s, url) {
    const problems = plainUrlProblems(url, 'dns', 'none', this.urlForm);
    if (s.dns_resolver !== null && resolverAddress(s.dns_resolver) === undefined) {
      problems.push({ path: '/dns_resolver', message: 'must be an IP address, with an optional port' });
    }
    problems.push(...assertionProblems(s.assertions, '/assertions', 'dns'));
    return problems;
  },
  // Its URL names what to resolve, not where to connect: its resolver is judged.
  targets(s) {
    const resolver = s.dns_resolver === null ? undefined : resolverAddress(s.dns_resolver);
    return resolver ? [{ path: '/dns_resolver', ...resolver }] : [];
  },
};
