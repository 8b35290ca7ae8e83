import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { GENERATED, replaceGenerated } from '../../tools/docs/generate.js';

describe('docs match the code (unit)', () => {
  for (const [file, name, make] of GENERATED) {
    it(`${file} lists every ${name === 'config' ? 'configuration variable' : 'error code'} as the code defines it`, () => {
      const text = readFileSync(file, 'utf8');
      expect(replaceGenerated(text, name, make()), `run npm run docs to refresh ${file}`).to.equal(text);
    });
  }
});
