import type { Json } from './responses.js';

/**
 * The ingest gateway's route serving the browser SDK's `<script>` build in the OpenAPI
 * document (docs/sdk.md).
 */

export const sdkPaths: Json = {
  '/sdk/v1.js': {
    get: {
      operationId: 'browserSdk',
      summary: 'The browser SDK (docs/sdk.md)',
      description:
        'The `<script>` build of @telemetry/browser. Public, cached for SDK_CACHE_SECONDS and revalidated by ETag, gzipped when accepted; 404 NOT_FOUND when the gateway was started without the built SDK.',
      security: [],
      responses: {
        '200': {
          description: 'The script.',
          headers: { ETag: { schema: { type: 'string' } }, 'Cache-Control': { schema: { type: 'string' } } },
          content: { 'text/javascript': { schema: { type: 'string' } } },
        },
        '304': { description: 'Not modified (If-None-Match matched the ETag).' },
        '404': { description: 'Not built on this gateway (NOT_FOUND).' },
      },
    },
  },
};
