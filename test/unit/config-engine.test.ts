import { expect } from 'chai';
import type { Request, Response } from 'express';
import { CONFIG_LIMITS, type ConfigItem, type ConfigSection, type Problem } from '@telemetry/contract';
import { AppError, newSealingKeyText, parseSealingKeys, SecretBox, type PgPool } from '@telemetry/platform';
import { ConfigEngine, slugKey, uniqueKey } from '../../services/query-service/src/config-as-code/engine.js';
import type { ConfigKindModule, ManagedObject } from '../../services/query-service/src/config-as-code/kind.js';

/**
 * The configuration engine (services/query-service/src/config-as-code/engine.ts) driving
 * small kinds of our own over an in-memory registry whose transactions (BEGIN, COMMIT,
 * ROLLBACK, savepoints) really keep or undo what was written: matching by key, duplicate
 * keys, SecretPins, problem paths, prune, the order of writes, dry runs, refused deletes.
 */

interface Row {
  id: string;
  key: string | null;
  version: number;
  name: string;
  /** The id of the object of the kind's `refSection` this one refers to. */
  ref?: string;
  token?: string;
}
type Managed = Row & ManagedObject;
interface Desired {
  id: string;
  key: string;
  name: string;
  ref?: string;
  token?: string;
}

const TENANT = 'ten_0123456789abcdef';

/** The registry: rows per section; every statement and write in `log`, in order. */
class FakeRegistry {
  rows: Record<ConfigSection, Row[]> = { channels: [], escalation_policies: [], monitors: [], status_pages: [] };
  log: string[] = [];
  private saved: string[] = [];
  private n = 0;

  pool(): PgPool {
    const client = {
      query: (sql: string) => {
        this.log.push(sql);
        if (sql === 'BEGIN' || sql.startsWith('SAVEPOINT') || sql.startsWith('BEGIN ')) {
          this.saved.push(JSON.stringify(this.rows));
        } else if (sql === 'ROLLBACK' || sql.startsWith('ROLLBACK TO')) {
          this.rows = JSON.parse(this.saved.pop()!) as FakeRegistry['rows'];
        } else if (sql === 'COMMIT') this.saved = [];
        return Promise.resolve({ rows: [], rowCount: 0 });
      },
      release: () => undefined,
    };
    return { connect: () => Promise.resolve(client) } as unknown as PgPool;
  }

  add(section: ConfigSection, r: Omit<Row, 'version' | 'id'> & { id?: string }): Row {
    const row = { version: 1, id: r.id ?? `${section}_${++this.n}`, ...r };
    this.rows[section].push(row);
    return row;
  }

  keys(section: ConfigSection): (string | null)[] {
    return this.rows[section].map((r) => r.key);
  }

  writes(): string[] {
    return this.log.filter((l) => /^(create|update|delete|after) /.test(l));
  }
}

function fakeKind(
  db: FakeRegistry,
  section: ConfigSection,
  o: { refSection?: ConfigSection; refuseDelete?: (r: Managed) => Problem[] } = {},
): ConfigKindModule<Managed, Desired> {
  const kind = {
    channels: 'channel',
    escalation_policies: 'escalation_policy',
    monitors: 'monitor',
    status_pages: 'status_page',
  }[section] as ConfigKindModule['kind'];
  const after = (what: string) => () => {
    db.log.push(`after ${what}`);
    return Promise.resolve();
  };
  return {
    section,
    kind,
    load: () => Promise.resolve(db.rows[section].filter((r): r is Managed => r.key !== null).map((r) => ({ ...r }))),
    unkeyed: () =>
      Promise.resolve(db.rows[section].filter((r) => r.key === null).map((r) => ({ id: r.id, name: r.name }))),
    setKey: (_tx, _t, id, key) => {
      const r = db.rows[section].find((x) => x.id === id);
      if (r) r.key = key;
      return Promise.resolve(r !== undefined);
    },
    secrets: (c) => new Map(c.token === undefined ? [] : [['/config/token', c.token]]),
    prepare: (item, current, ctx) => {
      const problems: Problem[] = [];
      if (typeof item.name !== 'string') problems.push({ path: '/name', message: 'must be a string' });
      const config = item.config as { token?: unknown } | undefined;
      if (config?.token !== undefined && typeof config.token !== 'string') {
        problems.push({ path: '/config/token', message: 'must be a string' });
      }
      let ref: string | undefined;
      if (typeof item.ref === 'string') {
        ref = ctx.idOf(o.refSection!, item.ref);
        if (ref === undefined) problems.push({ path: '/ref', message: `there is no ${o.refSection} ${item.ref}` });
      }
      if (problems.length > 0) return { problems };
      const id = current?.id ?? ctx.newId();
      return {
        id,
        desired: { id, key: item.key, name: item.name as string, ref, token: config?.token as string | undefined },
      };
    },
    changes: (c, d) =>
      [c.name !== d.name ? 'name' : '', c.ref !== d.ref ? 'ref' : '', c.token !== d.token ? 'config' : ''].filter(
        (f) => f !== '',
      ),
    create: (_tx, d) => {
      db.log.push(`create ${section} ${d.key}`);
      db.rows[section].push({ ...d, version: 1 });
      return Promise.resolve(after(`create ${d.key}`));
    },
    update: (_tx, c, d) => {
      db.log.push(`update ${section} ${d.key}`);
      const r = db.rows[section].find((x) => x.id === c.id)!;
      Object.assign(r, d, { version: r.version + 1 });
      return Promise.resolve(after(`update ${d.key}`));
    },
    remove: (_tx, c) => {
      const refused = o.refuseDelete?.(c) ?? [];
      if (refused.length > 0) return Promise.resolve(refused);
      db.log.push(`delete ${section} ${c.key}`);
      db.rows[section] = db.rows[section].filter((x) => x.id !== c.id);
      return Promise.resolve(after(`delete ${c.key}`));
    },
    exportOf: (c, ctx) => ({
      key: c.key,
      name: c.name,
      ...(c.ref !== undefined ? { ref: ctx.keyOf(o.refSection!, c.ref) } : {}),
      ...(c.token !== undefined ? { config: { token: { fingerprint: ctx.fingerprint(c.token) } } } : {}),
    }),
  };
}

describe('configuration engine (unit)', () => {
  const box = new SecretBox(parseSealingKeys(newSealingKeyText('k1')));
  const web = { req: {} as Request, res: {} as Response };
  let db: FakeRegistry;
  let engine: ConfigEngine;
  const make = (refuseDelete?: (r: Managed) => Problem[], sections: ConfigSection[] = [...ALL]) => {
    const kinds: Record<ConfigSection, () => ConfigKindModule> = {
      channels: () => fakeKind(db, 'channels', { refuseDelete }),
      escalation_policies: () => fakeKind(db, 'escalation_policies', { refSection: 'channels' }),
      monitors: () => fakeKind(db, 'monitors', { refSection: 'channels' }),
      status_pages: () => fakeKind(db, 'status_pages', { refSection: 'monitors' }),
    };
    let n = 0;
    engine = new ConfigEngine({
      pool: db.pool(),
      box,
      kinds: sections.map((s) => kinds[s]()),
      newIds: {
        channels: () => `chn_new${++n}`,
        escalation_policies: () => `esc_new${++n}`,
        monitors: () => `mon_new${++n}`,
        status_pages: (item) => String(item.key),
      },
    });
  };
  const ALL: ConfigSection[] = ['channels', 'escalation_policies', 'monitors', 'status_pages'];
  const apply = (doc: unknown, o: { dryRun?: boolean; prune?: boolean } = {}) =>
    engine.apply(TENANT, doc, { dryRun: o.dryRun ?? false, prune: o.prune ?? false }, web);
  /** The AppError an apply is refused with. */
  const refusal = async (doc: unknown, o: { dryRun?: boolean; prune?: boolean } = {}): Promise<AppError> => {
    try {
      await apply(doc, o);
    } catch (err) {
      if (err instanceof AppError) return err;
      throw err;
    }
    throw new Error('the apply was not refused');
  };
  const problemsOf = (e: AppError) => (e.details as { problems: Problem[] }).problems;

  beforeEach(() => {
    db = new FakeRegistry();
    make();
  });

  it('creates what the document has, resolves keys of objects it creates, then finds nothing to change', async () => {
    const doc = {
      version: 1,
      channels: [{ key: 'ops', name: 'Ops', config: { token: 't0ken' } }],
      monitors: [
        { key: 'api', name: 'API', ref: 'ops' },
        { key: 'web', name: 'Web' },
      ],
      status_pages: [{ key: 'public', name: 'Public', ref: 'web' }],
    };
    const plan = await apply(doc);
    expect(plan.applied).to.equal(true);
    expect(plan.summary).to.deep.equal({ create: 4, update: 0, delete: 0, unchanged: 0 });
    expect(plan.changes.map((c) => [c.action, c.kind, c.key])).to.deep.equal([
      ['create', 'channel', 'ops'],
      ['create', 'monitor', 'api'],
      ['create', 'monitor', 'web'],
      ['create', 'status_page', 'public'],
    ]);
    expect(plan.changes[0]).to.deep.include({ id: 'chn_new1', fields: ['name', 'config'] });
    // The monitor refers to the channel made in this same document, by the id it got.
    const api = db.rows.monitors.find((r) => r.key === 'api')!;
    expect(api.ref).to.equal('chn_new1');
    expect(db.rows.status_pages[0]!.ref).to.equal(db.rows.monitors.find((r) => r.key === 'web')!.id);
    // All in one transaction behind the registry's write lock; the AfterCommits after COMMIT, in order.
    const begin = db.log.indexOf('BEGIN');
    expect(db.log[begin + 1]).to.match(/pg_advisory_xact_lock/);
    expect(db.log.filter((l) => l === 'BEGIN')).to.have.length(1);
    const commit = db.log.indexOf('COMMIT');
    expect(db.log.slice(commit + 1)).to.deep.equal([
      'after create ops',
      'after create api',
      'after create web',
      'after create public',
    ]);

    const again = await apply(doc);
    expect(again.changes).to.deep.equal([]);
    expect(again.summary).to.deep.equal({ create: 0, update: 0, delete: 0, unchanged: 4 });

    const edited = await apply({ ...doc, monitors: [{ key: 'api', name: 'API v2', ref: 'ops' }, doc.monitors[1]] });
    expect(edited.changes).to.deep.equal([
      { kind: 'monitor', key: 'api', action: 'update', id: api.id, fields: ['name'] },
    ]);
    expect(db.rows.monitors.find((r) => r.key === 'api')).to.deep.include({ name: 'API v2', version: 2 });
  });

  it("refuses a key given twice in a section, at the later item, with the items' own problems, and writes nothing", async () => {
    const e = await refusal({
      version: 1,
      monitors: [
        { key: 'a', name: 'A' },
        { key: 'b', name: 7 },
        { key: 'a', name: 'A again' },
      ],
      // The same key in another section is another object.
      channels: [{ key: 'a', name: 'A' }],
    });
    expect(e.code).to.equal('VALIDATION_FAILED');
    expect(problemsOf(e)).to.deep.equal([
      { path: '/monitors/2/key', message: 'the key a is given twice (also at /monitors/0)' },
      { path: '/monitors/1/name', message: 'must be a string' },
    ]);
    expect(db.writes()).to.deep.equal([]);
    expect(db.rows.monitors).to.deep.equal([]);
  });

  it('answers every problem of every item at its path in the document, and writes nothing', async () => {
    db.add('channels', { key: 'kept', name: 'Kept' });
    const e = await refusal({
      version: 1,
      channels: [
        { key: 'fine', name: 'Fine' },
        { key: 'bad', name: 7, config: { token: 5 } },
      ],
      monitors: [
        { key: 'm1', name: 'M1', ref: 'fine' },
        { key: 'm2', name: 'M2', ref: 'nowhere' },
        // A reference to a channel the document has, even one with problems, is not missing.
        { key: 'm3', name: 'M3', ref: 'bad' },
        { key: 'm4', name: 'M4', ref: 'kept' },
      ],
    });
    expect(e.code).to.equal('VALIDATION_FAILED');
    expect(problemsOf(e)).to.deep.equal([
      { path: '/channels/1/name', message: 'must be a string' },
      { path: '/channels/1/config/token', message: 'must be a string' },
      { path: '/monitors/1/ref', message: 'there is no channels nowhere' },
    ]);
    expect(db.writes()).to.deep.equal([]);
    expect(db.keys('channels')).to.deep.equal(['kept']);
  });

  it('refuses a document of the wrong shape, one too large, and a section this server does not manage', async () => {
    const shape = await refusal({ version: 2, monitors: [{ name: 'no key' }], extra: 1 });
    expect(shape.code).to.equal('VALIDATION_FAILED');
    expect(problemsOf(shape).map((p) => p.path)).to.include.members(['/extra', '/version', '/monitors/0/key']);

    const many = Array.from({ length: CONFIG_LIMITS.maxObjects / 2 + 1 }, (_, i) => ({ key: `k${i}`, name: 'x' }));
    const large = await refusal({ version: 1, monitors: many, channels: many });
    expect(problemsOf(large)).to.deep.equal([
      { path: '/', message: `holds ${many.length * 2} objects; at most ${CONFIG_LIMITS.maxObjects} in one document` },
    ]);

    make(undefined, ['channels', 'monitors']);
    const unmanaged = await refusal({ version: 1, status_pages: [{ key: 'p', name: 'P' }] });
    expect(problemsOf(unmanaged)).to.deep.equal([
      { path: '/status_pages', message: 'this server does not manage status_pages from a document' },
    ]);
    expect(db.writes()).to.deep.equal([]);
  });

  it('keeps a stored secret for a SecretPin of its fingerprint, and refuses a pin that does not match or has nothing to keep', async () => {
    db.add('channels', { key: 'ops', name: 'Ops', token: 'old-secret' });
    const exported = await engine.export(TENANT);
    const item = exported.document.channels![0]!;
    const pin = (item.config as { token: { fingerprint: string } }).token;
    expect(pin.fingerprint).to.match(/^fp1\.k1\./);
    expect(JSON.stringify(exported)).to.not.include('old-secret');
    expect(box.fingerprintMatches(pin.fingerprint, 'old-secret', TENANT)).to.equal(true);

    // Sent back as exported: the stored value is kept, nothing changes.
    const same = await apply({ version: 1, channels: [item] });
    expect(same.summary).to.deep.equal({ create: 0, update: 0, delete: 0, unchanged: 1 });
    // Renamed with the pin: only the name changes, the secret stays.
    const renamed = await apply({ version: 1, channels: [{ ...item, name: 'Renamed' }] });
    expect(renamed.changes[0]!.fields).to.deep.equal(['name']);
    expect(db.rows.channels[0]).to.deep.include({ name: 'Renamed', token: 'old-secret' });

    const otherFp = box.fingerprint('another-secret', TENANT);
    const e = await refusal({
      version: 1,
      channels: [
        { key: 'ops', name: 'Ops', config: { token: { fingerprint: otherFp } } },
        { key: 'new', name: 'New', config: { token: { fingerprint: otherFp } } },
      ],
    });
    expect(problemsOf(e)).to.deep.equal([
      {
        path: '/channels/0/config/token',
        message: `the stored value's fingerprint is not ${otherFp} (it was changed): give the value (set the environment variable)`,
      },
      { path: '/channels/1/config/token', message: 'has no stored value to keep: give the value' },
    ]);
    // Another tenant's fingerprint of the same value does not match.
    const elsewhere = box.fingerprint('old-secret', 'ten_other');
    const e2 = await refusal({
      version: 1,
      channels: [{ key: 'ops', name: 'Ops', config: { token: { fingerprint: elsewhere } } }],
    });
    expect(problemsOf(e2).map((p) => p.path)).to.deep.equal(['/channels/0/config/token']);
    // A new value replaces it.
    const changed = await apply({
      version: 1,
      channels: [{ key: 'ops', name: 'Renamed', config: { token: 'new-secret' } }],
    });
    expect(changed.changes[0]!.fields).to.deep.equal(['config']);
    expect(db.rows.channels[0]!.token).to.equal('new-secret');
  });

  it('prunes only with prune, only managed objects, only in the sections the document has', async () => {
    db.add('channels', { key: 'keep', name: 'Keep' });
    db.add('channels', { key: 'old', name: 'Old' });
    db.add('channels', { key: null, name: 'Made by hand' });
    db.add('monitors', { key: 'm-old', name: 'Old monitor' });
    db.add('monitors', { key: null, name: 'Hand monitor' });
    db.add('status_pages', { key: 'page', name: 'Page' });
    const doc = { version: 1, channels: [{ key: 'keep', name: 'Keep' }], monitors: [] };

    const without = await apply(doc);
    expect(without.summary).to.deep.equal({ create: 0, update: 0, delete: 0, unchanged: 1 });
    expect(db.rows.channels).to.have.length(3);

    const plan = await apply(doc, { prune: true, dryRun: true });
    expect(plan.changes.map((c) => [c.action, c.kind, c.key, c.fields])).to.deep.equal([
      ['delete', 'monitor', 'm-old', []],
      ['delete', 'channel', 'old', []],
    ]);
    expect(plan.summary).to.deep.equal({ create: 0, update: 0, delete: 2, unchanged: 1 });

    await apply(doc, { prune: true });
    expect(db.keys('channels')).to.deep.equal(['keep', null]);
    expect(db.keys('monitors')).to.deep.equal([null]);
    // The document has no status_pages section: its pages are not its own.
    expect(db.keys('status_pages')).to.deep.equal(['page']);
  });

  it('writes in dependency order: deletes of pages and monitors, creates and updates, deletes of policies and channels', async () => {
    db.add('channels', { key: 'c-old', name: 'c' });
    db.add('channels', { key: 'c-upd', name: 'c' });
    db.add('escalation_policies', { key: 'e-old', name: 'e' });
    db.add('monitors', { key: 'm-old', name: 'm' });
    db.add('status_pages', { key: 's-old', name: 's' });
    const plan = await apply(
      {
        version: 1,
        status_pages: [{ key: 's-new', name: 's' }],
        monitors: [{ key: 'm-new', name: 'm', ref: 'c-new' }],
        escalation_policies: [{ key: 'e-new', name: 'e', ref: 'c-upd' }],
        channels: [
          { key: 'c-upd', name: 'changed' },
          { key: 'c-new', name: 'c' },
        ],
      },
      { prune: true },
    );
    const order = [
      'delete status_pages s-old',
      'delete monitors m-old',
      'update channels c-upd',
      'create channels c-new',
      'create escalation_policies e-new',
      'create monitors m-new',
      'create status_pages s-new',
      'delete escalation_policies e-old',
      'delete channels c-old',
    ];
    expect(db.writes().filter((w) => !w.startsWith('after'))).to.deep.equal(order);
    expect(plan.changes.map((c) => `${c.action} ${c.key}`)).to.deep.equal(order.map((w) => w.replace(/ \S+ /, ' ')));
    expect(db.writes().filter((w) => w.startsWith('after'))).to.have.length(9);
  });

  it('a dry run answers the plan and keeps nothing: its writes are rolled back and nothing is announced', async () => {
    db.add('channels', { key: 'old', name: 'Old' });
    const before = JSON.stringify(db.rows);
    const plan = await apply(
      { version: 1, channels: [{ key: 'new', name: 'New' }], monitors: [{ key: 'm', name: 'M', ref: 'new' }] },
      { dryRun: true, prune: true },
    );
    expect(plan.applied).to.equal(false);
    expect(plan.changes.map((c) => `${c.action} ${c.key}`)).to.deep.equal(['create new', 'create m', 'delete old']);
    expect(JSON.stringify(db.rows)).to.equal(before);
    expect(db.log).to.include('ROLLBACK TO SAVEPOINT config_dry_run');
    expect(db.log.filter((l) => l.startsWith('after'))).to.deep.equal([]);
  });

  it('a delete its kind refuses fails the whole apply with its problems, and nothing is kept', async () => {
    make((r) =>
      r.key === 'used' ? [{ path: '/', message: 'a monitor this document does not manage sends to it' }] : [],
    );
    db.add('channels', { key: 'used', name: 'Used' });
    db.add('channels', { key: 'free', name: 'Free' });
    const before = JSON.stringify(db.rows);
    const doc = { version: 1, channels: [{ key: 'new', name: 'New' }] };
    for (const dryRun of [true, false]) {
      const e = await refusal(doc, { prune: true, dryRun });
      expect(e.code).to.equal('VALIDATION_FAILED');
      expect(problemsOf(e)).to.deep.equal([
        {
          path: '/channels',
          message: 'the channel used cannot be deleted: a monitor this document does not manage sends to it',
        },
      ]);
      expect(JSON.stringify(db.rows)).to.equal(before);
      expect(db.log.filter((l) => l.startsWith('after'))).to.deep.equal([]);
    }
  });

  it('exports managed objects in key order with references as keys, and counts the unmanaged', async () => {
    const c = db.add('channels', { key: 'zeta', name: 'Z' });
    db.add('channels', { key: 'alpha', name: 'A' });
    db.add('channels', { key: null, name: 'hand' });
    db.add('monitors', { key: 'm', name: 'M', ref: c.id });
    db.add('monitors', { key: null, name: 'hand' });
    db.add('monitors', { key: null, name: 'hand 2' });
    const out = await engine.export(TENANT);
    expect(Object.keys(out.document)).to.deep.equal(['version', ...ALL]);
    expect(out.document.channels!.map((i: ConfigItem) => i.key)).to.deep.equal(['alpha', 'zeta']);
    expect(out.document.monitors).to.deep.equal([{ key: 'm', name: 'M', ref: 'zeta' }]);
    expect(out.unmanaged).to.deep.equal({ channels: 1, escalation_policies: 0, monitors: 2, status_pages: 0 });
    expect(db.log[0]).to.equal('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    // The export, applied, changes nothing.
    const plan = await apply(out.document, { prune: true });
    expect(plan.changes).to.deep.equal([]);
  });

  it('adopts every object without a key under a key made from its name, unique in its kind', async () => {
    db.add('monitors', { key: 'api', name: 'taken' });
    db.add('monitors', { key: null, name: 'API' });
    db.add('monitors', { key: null, name: 'api' });
    db.add('monitors', { key: null, name: 'Café Checkout / EU' });
    db.add('channels', { key: null, name: 'API' });
    db.add('channels', { key: null, name: '!!!' });
    const adopted = await engine.adopt(TENANT);
    expect(adopted.map((a) => [a.kind, a.key])).to.deep.equal([
      ['channel', 'api'],
      ['channel', 'channel'],
      ['monitor', 'api-2'],
      ['monitor', 'api-3'],
      ['monitor', 'cafe-checkout-eu'],
    ]);
    expect(db.keys('monitors')).to.deep.equal(['api', 'api-2', 'api-3', 'cafe-checkout-eu']);
    expect(await engine.adopt(TENANT)).to.deep.equal([]);
  });

  it('makes keys of names within the key pattern', () => {
    const pattern = /^[a-z0-9][a-z0-9._-]{0,62}$/;
    for (const name of [
      'Hello World',
      '  --x--  ',
      'ÅÄÖ',
      'a'.repeat(100),
      '日本',
      'v1.2_beta',
      'x'.repeat(62) + '-y',
    ]) {
      const key = slugKey(name, 'monitor');
      expect(key, name).to.match(pattern);
      expect(uniqueKey(key, new Set([key])), name).to.match(pattern);
    }
    expect(slugKey('Hello World', 'monitor')).to.equal('hello-world');
    expect(slugKey('日本', 'monitor')).to.equal('monitor');
    expect(uniqueKey('a'.repeat(63), new Set(['a'.repeat(63)]))).to.equal(`${'a'.repeat(61)}-2`);
    expect(uniqueKey('x', new Set(['x', 'x-2']))).to.equal('x-3');
  });
});
