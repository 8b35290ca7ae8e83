import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { ROLE_SCOPES, ROLES, SCOPE_DESCRIPTIONS, SCOPES } from '@telemetry/contract';

/** docs/access.md's role matrix (under "Roles and scopes") is ROLE_SCOPES, row for row. */
describe('docs/access.md role matrix (unit)', () => {
  const text = readFileSync('docs/access.md', 'utf8');
  const section = text.slice(text.indexOf('## Roles and scopes'), text.indexOf('## People and memberships'));
  const rows = section
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) =>
      l
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );

  it('has a column per role, in order', () => {
    const header = section.split('\n').find((l) => l.startsWith('| Scope'))!;
    expect(
      header
        .split('|')
        .map((c) => c.trim())
        .slice(3, -1),
    ).to.deep.equal([...ROLES]);
  });

  it('has a row per scope, with its description and the roles that hold it', () => {
    expect(rows.map((r) => r[0])).to.deep.equal(SCOPES.map((s) => `\`${s}\``));
    for (const [i, scope] of SCOPES.entries()) {
      const row = rows[i]!;
      expect(row[1], scope).to.equal(SCOPE_DESCRIPTIONS[scope]);
      const holders = ROLES.filter((_, j) => row[2 + j] === 'yes');
      expect(holders, scope).to.deep.equal(ROLES.filter((r) => ROLE_SCOPES[r].includes(scope)));
      for (const [j] of ROLES.entries()) expect(['yes', ''], `${scope} cell ${j}`).to.include(row[2 + j]);
    }
  });
});
