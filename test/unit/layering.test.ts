import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';

/** Every `from '…'` / `import('…')` specifier of the .ts files under `dir`, with its file. */
function importsUnder(dir: string): { file: string; spec: string }[] {
  const out: { file: string; spec: string }[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...importsUnder(path));
    else if (name.endsWith('.ts')) {
      for (const m of readFileSync(path, 'utf8').matchAll(/(?:from|import\()\s*'([^']+)'/g)) {
        out.push({ file: path, spec: m[1]! });
      }
    }
  }
  return out;
}

const SERVICES = readdirSync('services');

describe('layering: services → alerting → store → platform → contract (unit)', () => {
  it('libs/contract imports none of our packages', () => {
    expect(importsUnder('libs/contract/src').filter((i) => i.spec.startsWith('@telemetry/'))).to.deep.equal([]);
  });

  it('libs/platform imports no domain: neither libs/store nor any service', () => {
    const bad = importsUnder('libs/platform/src').filter(
      (i) => i.spec.startsWith('@telemetry/') && i.spec !== '@telemetry/contract',
    );
    expect(bad).to.deep.equal([]);
  });

  it('libs/store imports no service', () => {
    const bad = importsUnder('libs/store/src').filter(
      (i) => i.spec.startsWith('@telemetry/') && !['@telemetry/contract', '@telemetry/platform'].includes(i.spec),
    );
    expect(bad).to.deep.equal([]);
  });

  it('libs/alerting imports no service', () => {
    const ours = ['@telemetry/contract', '@telemetry/platform', '@telemetry/store'];
    const bad = importsUnder('libs/alerting/src').filter(
      (i) => i.spec.startsWith('@telemetry/') && !ours.includes(i.spec),
    );
    expect(bad).to.deep.equal([]);
  });

  it('no service imports another service', () => {
    const bad = SERVICES.flatMap((svc) =>
      importsUnder(`services/${svc}/src`).filter(
        (i) => SERVICES.some((other) => i.spec === `@telemetry/${other}`) || i.spec.includes('services/'),
      ),
    );
    expect(bad).to.deep.equal([]);
  });

  it('no service and no store module imports a Kafka library (Kafka is a detail of libs/platform)', () => {
    const kafka = (i: { spec: string }): boolean => i.spec === 'kafkajs' || i.spec.startsWith('@platformatic/kafka');
    const bad = [...SERVICES.map((svc) => `services/${svc}/src`), 'libs/store/src', 'libs/contract/src'].flatMap(
      (dir) => importsUnder(dir).filter(kafka),
    );
    expect(bad).to.deep.equal([]);
    // The check itself finds them where they are.
    expect(importsUnder('libs/platform/src').filter(kafka).length).to.be.greaterThan(0);
  });

  it('the browser SDK imports nothing but the limits it shares with the gateway (it ships to browsers)', () => {
    const bad = importsUnder('sdk/browser/src').filter(
      (i) => !i.spec.startsWith('./') && i.spec !== '@telemetry/contract/limits',
    );
    expect(bad).to.deep.equal([]);
    expect(importsUnder('libs/contract/src').filter((i) => i.file.endsWith('limits.ts'))).to.deep.equal([]);
  });

  it('tools/ never imports harness/ (the harness builds on the dev stack, not back)', () => {
    expect(importsUnder('tools').filter((i) => i.spec.includes('harness/'))).to.deep.equal([]);
  });

  it('libs/runtime is gone; libs are contract, platform, store and alerting', () => {
    expect(readdirSync('libs').sort()).to.deep.equal(['alerting', 'contract', 'platform', 'store']);
  });
});
