import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { ROOT, SERVICE_NAMES, SERVICE_NODE_FLAGS, serviceCommand } from '../../tools/devstack/commands.js';

describe('service node flags', () => {
  it('the query service keeps a 16 MB young generation from the start, compiled and from source', () => {
    for (const compiled of [true, false]) {
      const [, args] = serviceCommand('query-service', compiled);
      expect(args).to.include('--min-semi-space-size=16');
      // a flag before the script, not an argument of the service
      expect(args.indexOf('--min-semi-space-size=16')).to.be.below(args.length - 1);
    }
    for (const name of SERVICE_NAMES.filter((n) => n !== 'query-service')) {
      expect(serviceCommand(name, true)[1].join(' ')).not.to.contain('semi-space');
    }
  });

  it("the Dockerfile's command gives each service the same flags", () => {
    const cmd = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('CMD '));
    for (const name of SERVICE_NAMES) {
      const flags = SERVICE_NODE_FLAGS[name] ?? [];
      if (flags.length === 0) continue;
      expect(cmd).to.contain(
        `[ \\"$SERVICE\\" = ${name} ]; then exec node --disable-warning=TimeoutNegativeWarning ${flags.join(' ')} services/$SERVICE/dist/main.js`,
      );
    }
  });
});
