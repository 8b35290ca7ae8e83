/**
 * An object's configuration key (docs/as-code.md): in its own module, without ajv, because
 * the schemas browser code imports (channel-catalog.ts) name it.
 */

/** A key: 1 to 63 of a-z, 0-9, '.', '_', '-', starting with a letter or digit (as the registry's CHECK). */
export const CONFIG_KEY_PATTERN = '^[a-z0-9][a-z0-9._-]{0,62}$';

export const configKeySchema = { type: 'string', minLength: 1, maxLength: 63, pattern: CONFIG_KEY_PATTERN } as const;

/**
 * An object's `key` in the API: its key, or null (not managed by a file). One type list, not
 * an anyOf, so that a wrong key is one problem (at `/key`), not three.
 */
export const nullableConfigKeySchema = { ...configKeySchema, type: ['string', 'null'] } as const;
