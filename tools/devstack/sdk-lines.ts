/**
 * What `npm start` prints to point each tracker's own SDK at the stack (docs/compat.md),
 * one line per SDK: the development access key is the write key or project token, the
 * gateway is the host. The option names are each pinned SDK's own (package.json's
 * devDependencies; segment-analytics-python 2.4.0 and posthog 7.91.1 on PyPI).
 */
export function sdkLines(gateway: string, key: string): string[] {
  const k = `'${key}'`;
  const g = `'${gateway}'`;
  return [
    `  analytics.js (@segment/analytics-next)  AnalyticsBrowser.load({ writeKey: ${k}, cdnURL: ${g} })`,
    `  @segment/analytics-node                 new Analytics({ writeKey: ${k}, host: ${g} })`,
    `  segment-analytics-python                from segment.analytics import Client; Client(write_key=${k}, host=${g})`,
    `  posthog-js                              posthog.init(${k}, { api_host: ${g} })`,
    `  posthog-node                            new PostHog(${k}, { host: ${g} })`,
    `  posthog (Python)                        from posthog import Posthog; Posthog(${k}, host=${g})`,
  ];
}
