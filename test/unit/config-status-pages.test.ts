import { expect } from 'chai';
import type { Request, Response } from 'express';
import { createValidators, type ConfigItem, type ConfigSection } from '@telemetry/contract';
import type { PgClient } from '@telemetry/platform';
import type { StatusPageStore, StoredStatusPage } from '@telemetry/store';
import type { AuditRecord, Auditor } from '../../services/query-service/src/access/audit.js';
import {
  statusPageConfigKind,
  type DesiredStatusPage,
  type ManagedStatusPage,
} from '../../services/query-service/src/config-as-code/status-pages.js';
import type { PlanContext } from '../../services/query-service/src/config-as-code/kind.js';

/** Status pages as a configuration document's items (docs/as-code.md): the kind module without a database. */
describe('status pages as code (the config kind)', () => {
  const validators = createValidators();
  // Monitor keys of the tenant (and of the document) → ids.
  const monitorIds: Record<string, string> = { web: 'mon_00000000000000a1', api: 'mon_00000000000000a2' };
  const ctx: PlanContext = {
    tenantId: 'ten_a',
    idOf: (section: ConfigSection, key: string) => (section === 'monitors' ? monitorIds[key] : undefined),
    newId: () => 'unused',
  };
  const exportCtx = {
    tenantId: 'ten_a',
    keyOf: (section: ConfigSection, id: string) =>
      section === 'monitors' ? Object.keys(monitorIds).find((k) => monitorIds[k] === id) : undefined,
    fingerprint: () => 'never',
  };

  /** A fake store (what the kind calls, recorded) and auditor, and the hooks' calls. */
  const harness = () => {
    const calls: string[] = [];
    const audits: AuditRecord[] = [];
    const changed: (string | StoredStatusPage)[] = [];
    const store = {
      createIn: (_tx: PgClient, page: Omit<StoredStatusPage, 'version'>) => {
        calls.push(`create ${page.slug}`);
        return Promise.resolve({ ...page, key: page.key ?? null, version: 1 });
      },
      updateIn: (_tx: PgClient, next: Omit<StoredStatusPage, 'version'>, basedOn: number) => {
        calls.push(`update ${next.slug} at ${basedOn}`);
        return Promise.resolve(basedOn === 99 ? undefined : { ...next, version: basedOn + 1 });
      },
      removeIn: (_tx: PgClient, slug: string, _tenant: string, basedOn: number) => {
        calls.push(`remove ${slug} at ${basedOn}`);
        return Promise.resolve(true);
      },
      keyedIn: () => Promise.resolve([stored]),
      unkeyedIn: () => Promise.resolve([{ slug: 'legacy', title: 'Legacy page' }]),
      setKeyIn: () => Promise.resolve(true),
    } as unknown as StatusPageStore;
    const audit: Auditor = {
      record: (_req, _res, r) => {
        audits.push(r);
        return Promise.resolve();
      },
      denied: () => Promise.resolve(),
    };
    const kind = statusPageConfigKind({ store, validators, audit, pages: { changed: (p) => changed.push(p) } });
    return { kind, calls, audits, changed };
  };

  const stored: StoredStatusPage = {
    slug: 'shop',
    tenant_id: 'ten_a',
    title: 'Shop status',
    description: null,
    monitor_ids: [monitorIds.api!, monitorIds.web!],
    key: 'shop-page',
    created_at: '2026-11-01T00:00:00Z',
    updated_at: '2026-11-02T00:00:00Z',
    version: 3,
  };
  const current: ManagedStatusPage = { ...stored, id: 'shop', key: 'shop-page' };
  const item: ConfigItem = { key: 'shop-page', slug: 'shop', title: 'Shop status', monitor_ids: ['api', 'web'] };
  const apply = { tenantId: 'ten_a', req: { route: { path: '/api/config' } } as Request, res: {} as Response };
  const tx = {} as PgClient;

  const desiredOf = (i: ConfigItem, c?: ManagedStatusPage): DesiredStatusPage => {
    const prepared = harness().kind.prepare(i, c, ctx);
    if ('problems' in prepared) throw new Error(JSON.stringify(prepared.problems));
    return prepared.desired;
  };

  it('makes an item the page it describes: monitor keys as ids, defaults applied, its id the slug', () => {
    const prepared = harness().kind.prepare(item, undefined, ctx);
    expect(prepared).to.deep.equal({
      id: 'shop',
      desired: {
        slug: 'shop',
        title: 'Shop status',
        description: null,
        monitor_ids: [monitorIds.api, monitorIds.web],
        key: 'shop-page',
      },
    });
  });

  it("reports each problem at its path, by the route's own rules, and names a missing monitor's key", () => {
    const prepared = harness().kind.prepare(
      { key: 'p', slug: 'Not A Slug', title: '', monitor_ids: ['web', 'gone', 'web'], colour: 'red' },
      undefined,
      ctx,
    );
    expect(prepared).to.have.property('problems');
    if (!('problems' in prepared)) return;
    const paths = prepared.problems.map((p) => p.path);
    // '/monitor_ids': 'web' twice, as the route says of an id given twice.
    expect(paths).to.include.members(['/slug', '/title', '/monitor_ids/1', '/monitor_ids', '/colour']);
    expect(prepared.problems.find((p) => p.path === '/monitor_ids/1')!.message).to.equal(
      'there is no monitor with key gone',
    );
    expect(prepared.problems.find((p) => p.path === '/colour')!.message).to.not.equal('');
    // The missing key is said once (not also as a malformed monitor id).
    expect(paths.filter((p) => p === '/monitor_ids/1')).to.have.length(1);
    // A page needs a monitor, as POST /api/status-pages says.
    const none = harness().kind.prepare({ key: 'p', slug: 'p', title: 'P', monitor_ids: [] }, undefined, ctx);
    expect('problems' in none && none.problems.map((p) => p.path)).to.deep.equal(['/monitor_ids']);
    const wrongType = harness().kind.prepare({ key: 'p', slug: 'p', title: 'P', monitor_ids: [7] }, undefined, ctx);
    expect('problems' in wrongType && wrongType.problems.map((p) => p.path)).to.deep.equal(['/monitor_ids/0']);
  });

  it("refuses to change a page's slug (its public address)", () => {
    const prepared = harness().kind.prepare({ ...item, slug: 'shop-2' }, current, ctx);
    expect('problems' in prepared && prepared.problems.map((p) => p.path)).to.deep.equal(['/slug']);
    expect('problems' in prepared && prepared.problems[0]!.message).to.contain('new key');
  });

  it('finds no change for an item equal to the stored page, also after export; each changed field otherwise', () => {
    const { kind } = harness();
    expect(kind.changes(current, desiredOf(item, current))).to.deep.equal([]);
    const exported = kind.exportOf(current, exportCtx);
    expect(exported).to.deep.equal({
      key: 'shop-page',
      slug: 'shop',
      title: 'Shop status',
      monitor_ids: ['api', 'web'],
    });
    expect(kind.changes(current, desiredOf(exported, current))).to.deep.equal([]);
    // Defaults: an item without a description is a page without one.
    const described = { ...current, description: 'Our shop' };
    expect(kind.changes(described, desiredOf(item, described))).to.deep.equal(['description']);
    expect(kind.exportOf(described, exportCtx)).to.include({ description: 'Our shop' });
    expect(kind.changes(described, desiredOf(kind.exportOf(described, exportCtx), described))).to.deep.equal([]);
    // The monitors' order is the page's order.
    expect(kind.changes(current, desiredOf({ ...item, monitor_ids: ['web', 'api'] }, current))).to.deep.equal([
      'monitor_ids',
    ]);
    expect(
      kind.changes(current, desiredOf({ ...item, title: 'Shop', description: 'x', monitor_ids: ['web'] }, current)),
    ).to.deep.equal(['title', 'description', 'monitor_ids']);
  });

  it('leaves a monitor without a key out of the exported page', () => {
    const page = { ...current, monitor_ids: [monitorIds.web!, 'mon_00000000000000ff'] };
    expect(harness().kind.exportOf(page, exportCtx).monitor_ids).to.deep.equal(['web']);
  });

  it('has no secrets; lists unkeyed pages by slug and title; loads keyed pages with their slug as id', async () => {
    const { kind } = harness();
    expect(kind.secrets(current).size).to.equal(0);
    expect(await kind.unkeyed(tx, 'ten_a')).to.deep.equal([{ id: 'legacy', name: 'Legacy page' }]);
    expect(await kind.load(tx, 'ten_a')).to.deep.equal([current]);
  });

  it('writes in the transaction, and once committed updates this replica and audits as the API does', async () => {
    const { kind, calls, audits, changed } = harness();
    const desired = desiredOf({ ...item, slug: 'new-page', key: 'new-page', description: 'New' });
    const afterCreate = await kind.create(tx, desired, apply);
    expect(calls).to.deep.equal(['create new-page']);
    expect(changed).to.deep.equal([]); // nothing until the transaction committed
    await afterCreate();
    expect((changed[0] as StoredStatusPage).slug).to.equal('new-page');
    expect(audits[0]).to.deep.include({
      action: 'status_page.create',
      target: { type: 'status_page', id: 'new-page' },
    });
    expect(audits[0]!.changes!.key).to.deep.equal({ after: 'new-page' });

    const afterUpdate = await kind.update(tx, current, desiredOf({ ...item, title: 'Shop!' }, current), apply);
    expect(calls[1]).to.equal('update shop at 3');
    await afterUpdate();
    expect(audits[1]).to.deep.include({ action: 'status_page.update' });
    expect(audits[1]!.changes).to.deep.equal({ title: { before: 'Shop status', after: 'Shop!' } });
    expect(changed[1]).to.not.have.property('id');

    const afterRemove = await kind.remove(tx, current, apply);
    expect(calls[2]).to.equal('remove shop at 3');
    expect(afterRemove).to.be.a('function');
    if (typeof afterRemove === 'function') await afterRemove();
    expect(changed[2]).to.equal('shop');
    expect(audits[2]).to.deep.include({ action: 'status_page.delete' });

    let refused: unknown;
    await kind.update(tx, { ...current, version: 99 }, desiredOf(item, current), apply).catch((e: unknown) => {
      refused = e;
    });
    expect(refused).to.have.property('code', 'PRECONDITION_FAILED');
  });
});
