import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { SCHEMA_FILE, schemaText } from '@telemetry/cli';
import { GENERATED, replaceGenerated } from '../../tools/docs/generate.js';

describe('docs match the code (unit)', () => {
  for (const [file, name, make] of GENERATED) {
    const what = { config: 'configuration variable', errors: 'error code' }[name] ?? `${name} row`;
    it(`${file} lists every ${what} as the code defines it`, () => {
      const text = readFileSync(file, 'utf8');
      expect(replaceGenerated(text, name, make()), `run npm run docs to refresh ${file}`).to.equal(text);
    });
  }

  it(`${SCHEMA_FILE} is telemetry.yaml's schema as the CLI validates with it`, () => {
    expect(readFileSync(SCHEMA_FILE, 'utf8'), 'run npm run docs to refresh it').to.equal(schemaText());
  });
});
