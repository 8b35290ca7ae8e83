import type { Json } from './responses.js';

/** The routes every HTTP service answers in the OpenAPI document: liveness, readiness, metrics. */

export const healthPaths: Json = {
  '/healthz': { get: { operationId: 'healthz', summary: 'Liveness', responses: { '200': { description: 'Alive.' } } } },
  '/readyz': {
    get: {
      operationId: 'readyz',
      summary: 'Readiness',
      responses: { '200': { description: 'Ready.' }, '503': { description: 'Not ready or shutting down.' } },
    },
  },
  '/metrics': {
    get: {
      operationId: 'metrics',
      summary: 'Prometheus metrics',
      responses: {
        '200': { description: 'Text exposition format.', content: { 'text/plain': { schema: { type: 'string' } } } },
      },
    },
  },
};
