import { CONFIG_KINDS, CONFIG_LIMITS, CONFIG_SECTIONS, configKeySchema } from '../config-as-code.js';
import { queryParam } from './parameters.js';
import { bodyErrors, envelopeOf, jsonBody, jsonOk, keyErrors, ref, type Json } from './responses.js';

/**
 * Monitoring as code in the OpenAPI document (docs/as-code.md, "The API"): the tenant's
 * managed monitors, channels, escalation policies and status pages as one document,
 * planned and applied in one transaction. Each route needs the scopes of both families.
 */

const booleanParam = (name: string, description: string): Json =>
  queryParam(name, { type: 'string', enum: ['true', 'false'], default: 'false' }, description);

/** GET /api/config's data. */
export const configExportSchema: Json = {
  type: 'object',
  additionalProperties: false,
  required: ['document', 'unmanaged'],
  properties: {
    document: ref('ConfigDocument'),
    unmanaged: {
      type: 'object',
      description:
        'How many objects of each kind have no key (left out of the document; POST /api/config/adopt gives them one).',
      additionalProperties: false,
      required: [...CONFIG_SECTIONS],
      properties: Object.fromEntries(CONFIG_SECTIONS.map((s) => [s, { type: 'integer', minimum: 0 }])),
    },
  },
};

/** POST /api/config/adopt's data. */
export const configAdoptedSchema: Json = {
  type: 'object',
  additionalProperties: false,
  required: ['adopted'],
  properties: {
    adopted: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['kind', 'id', 'key'],
        properties: { kind: { enum: Object.values(CONFIG_KINDS) }, id: { type: 'string' }, key: configKeySchema },
      },
    },
  },
};

const bothScopes = (verb: 'read' | 'write'): Json[] => [{ apiKey: [`monitors:${verb}`, `channels:${verb}`] }];

export const configPaths: Json = {
  '/api/config': {
    get: {
      operationId: 'exportConfig',
      summary: "The tenant's managed objects (those with a key) as a configuration document",
      description:
        'Sections in creation order, items in key order, references as keys, each secret as a SecretPin of its keyed fingerprint (never the value). Needs monitors:read and channels:read.',
      security: bothScopes('read'),
      responses: {
        '200': jsonOk('The document, and how many objects have no key.', envelopeOf(ref('ConfigExport'))),
        ...keyErrors('INVALID_PARAMETER', 'REGISTRY_UNAVAILABLE'),
      },
    },
    post: {
      operationId: 'applyConfig',
      summary: 'Plan a configuration document against the tenant, and apply it (all or nothing)',
      description: `Items are matched to the tenant's objects by key; an object the document describes is created or brought to the item (fields left out take the create route's defaults). Every item is validated by its kind's own rules first: any problem answers 400 VALIDATION_FAILED with all of them (paths like /monitors/2/interval_seconds) and nothing is written. With prune=true, managed objects of the sections the document has, whose key it lacks, are deleted (objects without a key never are). Everything is written in one transaction; with dry_run=true nothing is kept. Needs monitors:write and channels:write; a key limited to some monitors is refused. At most ${CONFIG_LIMITS.maxObjects} objects and ${CONFIG_LIMITS.maxBodyBytes} bytes.`,
      security: bothScopes('write'),
      parameters: [
        booleanParam('dry_run', 'true: plan only; the answer says what would change and nothing is written.'),
        booleanParam('prune', "true: delete the managed objects of the document's sections that it no longer has."),
      ],
      requestBody: jsonBody('ConfigDocument'),
      responses: {
        '200': jsonOk('What changes (dry run) or changed, in the order applied.', envelopeOf(ref('ConfigPlan'))),
        ...keyErrors(
          ...bodyErrors,
          'INVALID_PARAMETER',
          'TARGET_NOT_ALLOWED',
          'QUOTA_EXCEEDED',
          'KEY_TAKEN',
          'SLUG_TAKEN',
          'IN_USE',
          'REGISTRY_UNAVAILABLE',
        ),
      },
    },
  },
  '/api/config/adopt': {
    post: {
      operationId: 'adoptConfig',
      summary: 'Give every object of the tenant without a key one made from its name',
      description:
        'Lower case, a-z 0-9 . _ -, at most 63 characters; -2, -3… when the key is taken. One transaction; each object adopted is audited (config.adopt). Needs monitors:write and channels:write.',
      security: bothScopes('write'),
      responses: {
        '200': jsonOk('The objects that got a key.', envelopeOf(ref('ConfigAdopted'))),
        ...keyErrors('INVALID_PARAMETER', 'REGISTRY_UNAVAILABLE'),
      },
    },
  },
};
