import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface HttpMetrics {
  registry: Registry;
  requests: Counter<'route' | 'method' | 'status' | 'code'>;
  duration: Histogram<'route' | 'method' | 'status'>;
}

/** One registry per service instance (no global registry: tests run several in one process). */
export function createRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

export function createHttpMetrics(registry: Registry): HttpMetrics {
  return {
    registry,
    requests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by route template, method, status and error code ("" on success)',
      labelNames: ['route', 'method', 'status', 'code'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency by route template',
      labelNames: ['route', 'method', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
  };
}

/** A counter registered in `registry` only (no global registry). */
export function counter<L extends string = string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[] = [],
): Counter<L> {
  return new Counter({ name, help, labelNames, registers: [registry] });
}

/** A histogram registered in `registry` only. */
export function histogram<L extends string = string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  buckets: number[],
): Histogram<L> {
  return new Histogram({ name, help, labelNames, buckets, registers: [registry] });
}
