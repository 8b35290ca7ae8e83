import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Validator } from '@seriousme/openapi-schema-validator';
import { buildOpenApi, ERROR_CODES } from '@telemetry/contract';
import { OPENAPI_FILE, openapiText } from '../../tools/docs/generate.js';

describe('OpenAPI document (unit)', () => {
  for (const part of ['all', 'gateway', 'query'] as const) {
    it(`is a valid OpenAPI 3.1 document (${part})`, async () => {
      const validator = new Validator();
      const result = await validator.validate(buildOpenApi(part));
      expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).to.deep.equal([]);
      expect(result.valid).to.equal(true);
      expect(validator.version).to.equal('3.1');
    });
  }

  it('documents every error code, and docs/openapi.json is up to date', () => {
    const doc = buildOpenApi('all') as { components: { schemas: { ErrorCode: { enum: string[] } } } };
    expect(doc.components.schemas.ErrorCode.enum).to.deep.equal(Object.keys(ERROR_CODES));
    expect(readFileSync(OPENAPI_FILE, 'utf8'), 'run npm run docs').to.equal(openapiText());
  });

  it('references only components that exist', () => {
    const text = JSON.stringify(buildOpenApi('all'));
    const doc = JSON.parse(text) as { components: { schemas: Record<string, unknown> } };
    for (const [, name] of text.matchAll(/"#\/components\/schemas\/([A-Za-z]+)"/g)) {
      expect(doc.components.schemas, name).to.have.property(name!);
    }
  });
});
