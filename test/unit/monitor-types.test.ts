import { isIP } from 'node:net';
import { expect } from 'chai';
import {
  MONITOR_TYPE_MODULES,
  MONITOR_TYPES,
  SETTING_NAMES,
  ipVersion,
  monitorDefaults,
  monitorSettingsSchema,
  monitorTypeModule,
  retype,
  typeDefaults,
  typeProblems,
  typesUsing,
  type MonitorSettings,
  type MonitorType,
  type MonitorTypeModule,
} from '@telemetry/contract';
import { DEFAULT_MONITOR } from '@telemetry/store';

const monitor = (over: Partial<MonitorSettings>): MonitorSettings => ({
  ...DEFAULT_MONITOR,
  name: 'm',
  url: 'http://127.0.0.1/',
  ...over,
});

/** `a, b and c`, as the problems list the types. */
const listed = (types: readonly string[]): string =>
  types.length === 1 ? types[0]! : `${types.slice(0, -1).join(', ')} and ${types.at(-1)!}`;

describe('monitor type modules (unit)', () => {
  it('has one module per value of the schema’s type enum, each under its own type', () => {
    expect(monitorSettingsSchema.properties.type.enum).to.deep.equal(MONITOR_TYPES);
    expect(Object.keys(MONITOR_TYPE_MODULES).sort()).to.deep.equal([...MONITOR_TYPES].sort());
    for (const t of MONITOR_TYPES) expect(monitorTypeModule(t).type).to.equal(t);
    // The compiler refuses a map without a module for every type (tsc -b checks this file).
    // @ts-expect-error: heartbeat is missing
    const partial: { readonly [T in MonitorType]: MonitorTypeModule<T> } = {
      http: MONITOR_TYPE_MODULES.http,
      tcp: MONITOR_TYPE_MODULES.tcp,
      tls: MONITOR_TYPE_MODULES.tls,
      dns: MONITOR_TYPE_MODULES.dns,
    };
    expect(partial).to.not.have.property('heartbeat');
  });

  it('takes every default from the schema: every setting but name and url has one', () => {
    const defaults = monitorDefaults();
    expect(Object.keys(defaults).sort()).to.deep.equal(SETTING_NAMES.filter((n) => n !== 'name' && n !== 'url').sort());
    expect(defaults).to.include({ type: 'http', method: 'GET', interval_seconds: 60, tls_min_days: null });
    // A fresh copy each time: no default array is shared.
    defaults.locations.push('x');
    expect(monitorDefaults().locations).to.deep.equal(['default']);
    expect(typeDefaults('tls')).to.include({ type: 'tls', tls_min_days: 14 });
    expect(typeDefaults('dns')).to.include({ dns_record_type: 'A' });
  });

  it('refuses a setting of another type, naming the types that use it', () => {
    const paths = (s: MonitorSettings) => typeProblems(s).map((p) => `${p.path} ${p.message}`);
    expect(paths(monitor({ type: 'tcp', url: 'tcp://127.0.0.1:25', keyword: 'x' }))).to.deep.equal([
      '/keyword applies to http monitors only',
    ]);
    expect(paths(monitor({ tcp_send: 'PING' }))).to.deep.equal(['/tcp_send applies to tcp monitors only']);
    expect(
      paths(monitor({ type: 'heartbeat', url: 'heartbeat://mon_1', heartbeat_grace_seconds: 60, confirm_delay_ms: 5 })),
    ).to.deep.equal([`/confirm_delay_ms applies to ${listed(typesUsing('confirm_delay_ms')!)} monitors only`]);
    expect(typesUsing('confirm_delay_ms')).to.include.members(['http', 'tcp', 'tls', 'dns']);
    expect(typesUsing('interval_seconds')).to.equal(undefined);
    expect(paths(monitor({ url: 'heartbeat://mon_1' }))).to.deep.equal([
      '/url heartbeat:// is the URL of heartbeat monitors only',
    ]);
    expect(paths(monitor({ url: '' }))).to.deep.equal(['/url is required']);
    expect(paths(monitor({ type: 'tcp', url: 'tcp://127.0.0.1' }))).to.deep.equal([
      '/url a tcp monitor checks tcp://host:port, with nothing else',
    ]);
  });

  it('a change of type puts the old type’s settings back to their defaults and brings the new one’s', () => {
    const tls = monitor({ type: 'tls', url: 'tls://127.0.0.1', tls_min_days: 30, confirm_delay_ms: 100 });
    const dns = retype(tls, 'dns');
    expect(dns).to.include({ type: 'dns', tls_min_days: null, dns_record_type: 'A', confirm_delay_ms: 100 });
    expect(retype(dns, 'heartbeat')).to.include({
      dns_record_type: null,
      confirm_delay_ms: 0,
      heartbeat_grace_seconds: 60,
    });
  });

  it('tells IP literals as node:net does, in code the browser runs too', () => {
    for (const s of [
      '127.0.0.1',
      '255.255.255.255',
      '0.0.0.0',
      '::1',
      '::',
      '2001:db8::53',
      '::ffff:127.0.0.1',
      'fe80::1',
    ]) {
      expect(ipVersion(s), s).to.equal(isIP(s));
    }
    for (const s of [
      '256.1.1.1',
      '01.2.3.4',
      '1.2.3',
      '1.2.3.4.5',
      'localhost',
      '',
      ':::',
      '1::2::3',
      'g::1',
      '127.1',
    ]) {
      expect([ipVersion(s), isIP(s)], s).to.deep.equal([0, 0]);
    }
  });
});
