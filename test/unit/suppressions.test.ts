import { expect } from 'chai';
import { withoutSuppressed } from '@telemetry/ingest-gateway';
import { isSuppressedMessage, SuppressionList, type TenantSuppressions } from '@telemetry/store';

/** A suppression list over fixed rows, as the change feed would load them. */
async function listOf(rows: { tenant_id: string; kind: string; value: string }[]): Promise<SuppressionList> {
  const db = {
    query: (_sql: string, params?: unknown[]) => {
      const tenants = params?.[0] as string[] | undefined;
      return Promise.resolve({ rows: rows.filter((r) => !tenants || tenants.includes(r.tenant_id)) });
    },
  };
  const list = new SuppressionList(db as never);
  await list.mirror.reload();
  return list;
}

const message = (v: object) => ({ key: 'k', value: JSON.stringify(v) });

describe('suppressions: new events of deleted ids (unit)', () => {
  it('drops the events of a suppressed user id or anonymous id of the tenant only', async () => {
    const list = await listOf([
      { tenant_id: 'ten_a', kind: 'user_id', value: 'alice' },
      { tenant_id: 'ten_a', kind: 'anonymous_id', value: 'anon-1' },
    ]);
    expect(list.suppressed('ten_a', 'alice', undefined)).to.equal(true);
    expect(list.suppressed('ten_a', undefined, 'anon-1')).to.equal(true);
    expect(list.suppressed('ten_a', 'bob', 'anon-2')).to.equal(false);
    // The same ids of another tenant are that tenant's.
    expect(list.suppressed('ten_b', 'alice', 'anon-1')).to.equal(false);
    // A user id that happens to equal a suppressed anonymous id is another id.
    expect(list.suppressed('ten_a', 'anon-1', undefined)).to.equal(false);

    const msgs = [
      message({ tenant_id: 'ten_a', user_id: 'alice' }),
      message({ tenant_id: 'ten_a', user_id: 'bob' }),
      message({ tenant_id: 'ten_a', anonymous_id: 'anon-1', user_id: 'carol' }),
    ];
    expect(withoutSuppressed(list, 'ten_a', msgs).map((m) => m.value)).to.deep.equal([msgs[1]!.value]);
    // A tenant without a list: the same array, no message read.
    const other = [{ key: 'k', value: 'not json at all' }];
    expect(withoutSuppressed(list, 'ten_b', other)).to.equal(other);
    expect(withoutSuppressed(undefined, 'ten_a', msgs)).to.equal(msgs);
  });

  it('judges a dead letter by its tenant and ids; what is not an event JSON is not judged', () => {
    const lists = new Map<string, TenantSuppressions>([
      ['ten_a', { tenantId: 'ten_a', userIds: new Set(['alice']), anonymousIds: new Set(['anon-1']) }],
    ]);
    const suppressed = (t: string, u: string | undefined, a: string | undefined): boolean => {
      const l = lists.get(t);
      return !!l && ((u !== undefined && l.userIds.has(u)) || (a !== undefined && l.anonymousIds.has(a)));
    };
    const v = (o: object) => Buffer.from(JSON.stringify(o));
    expect(isSuppressedMessage(v({ tenant_id: 'ten_a', user_id: 'alice' }), suppressed)).to.equal(true);
    expect(isSuppressedMessage(v({ tenant_id: 'ten_a', anonymous_id: 'anon-1' }), suppressed)).to.equal(true);
    expect(isSuppressedMessage(v({ tenant_id: 'ten_b', user_id: 'alice' }), suppressed)).to.equal(false);
    expect(isSuppressedMessage(v({ user_id: 'alice' }), suppressed)).to.equal(false);
    expect(isSuppressedMessage(Buffer.from('still not json'), suppressed)).to.equal(false);
    expect(isSuppressedMessage(null, suppressed)).to.equal(false);
  });
});
