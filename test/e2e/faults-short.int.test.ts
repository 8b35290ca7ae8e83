import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';

const run = promisify(execFile);

interface ScenarioFigures {
  name: string;
  acknowledged: number;
  lost: number;
  duplicatedAsRead: number;
}

/**
 * The short fault suite (npm run test:faults:short) as part of npm test: Kafka restarted,
 * ClickHouse stopped, the consumer SIGKILLed, the gateway SIGTERMed, consumers scaled,
 * each under load with every acknowledged id checked. The full suite is npm run test:faults.
 */
describe('fault suite, short (real Kafka, ClickHouse and service processes)', () => {
  it('loses nothing acknowledged and shows no duplicate in any scenario', async function () {
    this.timeout(900_000);
    let stdout = '';
    let code = 0;
    try {
      // FAULTS_WRITE=0: RELIABILITY.md keeps the figures of the full run (npm run test:faults).
      stdout = (
        await run('npm', ['run', '--silent', 'test:faults:short'], {
          maxBuffer: 64 * 1024 * 1024,
          env: { ...process.env, FAULTS_WRITE: '0' },
        })
      ).stdout;
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; code?: number };
      stdout = e.stdout ?? '';
      code = e.code ?? 1;
      expect.fail(`test:faults:short exited ${code}:\n${stdout.slice(-4000)}\n${(e.stderr ?? '').slice(-4000)}`);
    }
    const last = stdout.trim().split('\n').at(-1)!;
    const figures = JSON.parse(last) as { scenarios: ScenarioFigures[] };
    expect(figures.scenarios.map((s) => s.name)).to.have.length(5);
    for (const s of figures.scenarios) {
      expect(s.acknowledged, s.name).to.be.greaterThan(0);
      expect([s.name, s.lost, s.duplicatedAsRead]).to.deep.equal([s.name, 0, 0]);
    }
  });
});
