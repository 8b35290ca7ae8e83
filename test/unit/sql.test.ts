import { expect } from 'chai';
import { sqlIdentifier, sqlNumber, sqlString, sqlStringList } from '@telemetry/platform';

describe('sql escaping (unit)', () => {
  it('quotes plain strings', () => {
    expect(sqlString('abc')).to.equal("'abc'");
    expect(sqlString('')).to.equal("''");
  });

  it('escapes quotes and backslashes so they cannot end the literal', () => {
    expect(sqlString("it's")).to.equal("'it\\'s'");
    expect(sqlString('a\\')).to.equal("'a\\\\'");
    expect(sqlString("\\'")).to.equal("'\\\\\\''");
    expect(sqlString("x' OR 1=1 --")).to.equal("'x\\' OR 1=1 --'");
  });

  it('escapes NUL and every control character as \\xHH', () => {
    expect(sqlString('a\u0000b')).to.equal("'a\\x00b'");
    expect(sqlString('\n\r\t\u001f\u007f')).to.equal("'\\x0a\\x0d\\x09\\x1f\\x7f'");
  });

  it('keeps non-ASCII text as it is', () => {
    expect(sqlString('Grüße 🚀 日本')).to.equal("'Grüße 🚀 日本'");
  });

  it('never lets an unescaped quote through, whatever the input', () => {
    const nasty = [
      "'",
      "''",
      "\\'",
      "\\\\'",
      "'; DROP TABLE checks; --",
      '/* */',
      "' /*",
      '`',
      '"',
      '\u2019',
      'x'.repeat(100_000) + "'",
    ];
    for (const s of nasty) {
      const lit = sqlString(s);
      // strip escaped pairs; what is left must contain no quote but the outer ones
      const body = lit.slice(1, -1).replace(/\\./g, '');
      expect(body, JSON.stringify(s.slice(0, 40))).not.to.contain("'");
    }
  });

  it('accepts only finite numbers and plain identifiers', () => {
    expect(sqlNumber(42)).to.equal('42');
    expect(() => sqlNumber(Number.NaN)).to.throw(TypeError);
    expect(() => sqlNumber(Infinity)).to.throw(TypeError);
    expect(sqlIdentifier('telemetry_1')).to.equal('`telemetry_1`');
    for (const bad of ['', '1abc', 'a-b', 'a`b', 'a b', 'x'.repeat(65), 'db; DROP']) {
      expect(() => sqlIdentifier(bad), bad).to.throw(TypeError);
    }
    expect(sqlStringList(['up', "d'own"])).to.equal("('up', 'd\\'own')");
    expect(() => sqlStringList([])).to.throw(TypeError);
  });
});
