import type { Counter } from 'prom-client';
import type { EventMessage } from '@telemetry/contract';
import { compileEventSchema, type EventSchemaCheck } from '@telemetry/contract/event-schema';
import { AppError, ByteLru, type Logger } from '@telemetry/platform';
import type { EventSchemaIndex, EventSchemaRecord } from '@telemetry/store';
import { eventOf, type EventProducerMessage } from './ingest.js';

/** A violation's message, as kept in a message's schema_failure (keeps the message small). */
const MAX_VIOLATION_CHARS = 256;
/**
 * Compiled validators kept, least recently used dropped first: a tenant that keeps adding
 * versions evicts its own old ones, not every tenant's at once. Weighed by the schema's
 * JSON size (at most 32 KiB each, plus 1 KiB for the compiled code).
 */
const COMPILED_BYTES = 64 * 1024 * 1024;

/**
 * Tenants' event schemas at the gateway (docs/event-schemas.md): an event whose tenant
 * has a schema for its (source, category) has its `payload` validated against the
 * schema's newest version. Action `reject`: the whole request is refused (400
 * SCHEMA_VIOLATION, nothing published). Action `route`: the event is published with
 * `schema_failure`, and the consumer writes it to `failed_events`. Events of a tenant
 * without schemas cost one map look-up.
 */
export class GatewaySchemas {
  private readonly compiled = new ByteLru<EventSchemaCheck | 'broken'>(COMPILED_BYTES);

  constructor(
    private readonly index: Pick<EventSchemaIndex, 'find' | 'hasTenant'>,
    private readonly logger: Logger,
    private readonly counted?: Counter<'outcome'>,
  ) {}

  /**
   * The messages to publish (violators of a `route` schema rewritten with
   * schema_failure); throws SCHEMA_VIOLATION when one violates a `reject` schema.
   */
  apply(tenantId: string, messages: EventProducerMessage[]): EventProducerMessage[] {
    if (!this.index.hasTenant(tenantId)) return messages;
    const problems: { path: string; message: string }[] = [];
    const invalid: number[] = [];
    const schemas: { event: number; schema_id: string; version: number }[] = [];
    // Counted once per request and outcome: a labelled inc per event costs what a check does.
    const outcomes = { valid: 0, reject: 0, route: 0 };
    const out = messages.map((m, i) => {
      const msg = eventOf(m);
      const schema = this.index.find(tenantId, msg.source, msg.category);
      if (!schema) return m;
      const check = this.checkOf(schema);
      if (check === 'broken') return m;
      const violations = check(msg.payload);
      outcomes[violations.length === 0 ? 'valid' : schema.action]++;
      if (violations.length === 0) return m;
      if (schema.action === 'reject') {
        invalid.push(i);
        schemas.push({ event: i, schema_id: schema.schema_id, version: schema.version });
        for (const v of violations) {
          problems.push({ path: `/events/${i}/payload${v.path === '/' ? '' : v.path}`, message: v.message });
        }
        return m;
      }
      const failed: EventMessage = {
        ...msg,
        schema_failure: {
          schema_id: schema.schema_id,
          version: schema.version,
          violations: violations.map((v) => ({ path: v.path, message: v.message.slice(0, MAX_VIOLATION_CHARS) })),
        },
      };
      return { ...m, value: JSON.stringify(failed), event: failed };
    });
    for (const [outcome, n] of Object.entries(outcomes)) if (n > 0) this.counted?.inc({ outcome }, n);
    if (invalid.length > 0) {
      throw new AppError(
        'SCHEMA_VIOLATION',
        `event ${invalid[0]} violates its event schema: ${problems[0]?.path} ${problems[0]?.message}`,
        { invalid_events: invalid, problems: problems.slice(0, 100), schemas },
      );
    }
    return out;
  }

  private checkOf(s: EventSchemaRecord): EventSchemaCheck | 'broken' {
    const key = `${s.schema_id}@${s.version}`;
    let c = this.compiled.get(key);
    if (c === undefined) {
      try {
        c = compileEventSchema(s.schema);
      } catch (err) {
        // The query service compiled it before storing it; a schema that does not compile
        // here (an older ajv?) lets events through rather than refusing all of them.
        this.logger.error('event schema does not compile; its events pass unchecked', {
          schema_id: s.schema_id,
          version: s.version,
          err: String(err),
        });
        c = 'broken';
      }
      this.compiled.set(key, c, 1024 + JSON.stringify(s.schema).length);
    }
    return c;
  }
}
