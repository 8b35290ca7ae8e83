import { expect } from 'chai';
import { classifyInsertError, rowBinaryEncoder, RowEncodingError, typeWriter } from '@telemetry/platform';

function encode(columns: [string, string][], rows: object[]): Buffer {
  const enc = rowBinaryEncoder(columns.map(([name, type]) => ({ name, type })));
  if (!enc) throw new Error('no encoder');
  return enc(rows);
}

const hex = (b: Buffer): string => b.toString('hex');

describe('RowBinary encoder (unit)', () => {
  it('writes strings with their UTF-8 length as a varint, short and long', () => {
    expect(hex(encode([['s', 'String']], [{ s: 'abc' }]))).to.equal('03616263');
    expect(hex(encode([['s', 'String']], [{ s: '' }]))).to.equal('00');
    expect(hex(encode([['s', 'String']], [{ s: 'é' }]))).to.equal('02c3a9');
    const long = 'x'.repeat(300);
    const b = encode([['s', 'String']], [{ s: long }]);
    expect(hex(b.subarray(0, 2))).to.equal('ac02'); // 300 = 0b10_0101100
    expect(b.length).to.equal(302);
    // 42 characters of 3 bytes each: the short path's length byte holds 126.
    const wide = '日'.repeat(42);
    expect(encode([['s', 'String']], [{ s: wide }])[0]).to.equal(126);
    const wider = '日'.repeat(43); // 129 bytes: a two-byte varint
    expect(hex(encode([['s', 'String']], [{ s: wider }]).subarray(0, 2))).to.equal('8101');
  });

  it('writes every short string as Buffer.from does, ASCII or not (the byte-by-byte path and its fallback)', () => {
    const samples: string[] = [];
    for (let n = 0; n <= 50; n++) {
      samples.push(
        'a'.repeat(n),
        `${'b'.repeat(n)}é`,
        `é${'c'.repeat(n)}`,
        `${'d'.repeat(n)}\u007f`,
        `${'e'.repeat(n)}\ud800`,
      );
    }
    for (const s of samples) {
      const bytes = Buffer.from(s, 'utf8');
      const got = encode([['s', 'String']], [{ s }]);
      const len =
        bytes.length < 128
          ? Buffer.from([bytes.length])
          : Buffer.from([(bytes.length & 0x7f) | 0x80, bytes.length >> 7]);
      expect(hex(got), JSON.stringify(s)).to.equal(hex(Buffer.concat([len, bytes])));
    }
  });

  it('writes integers, floats and booleans little-endian in their widths', () => {
    const cols: [string, string][] = [
      ['a', 'UInt8'],
      ['b', 'UInt16'],
      ['c', 'UInt32'],
      ['d', 'UInt64'],
      ['e', 'Int32'],
      ['f', 'Float64'],
      ['g', 'Bool'],
    ];
    const b = encode(cols, [{ a: 255, b: 258, c: 4_294_967_295, d: '18446744073709551615', e: -2, f: 1.5, g: true }]);
    expect(hex(b)).to.equal('ff' + '0201' + 'ffffffff' + 'ffffffffffffffff' + 'feffffff' + '000000000000f83f' + '01');
  });

  it('writes a UUID as ClickHouse keeps it: each 8-byte half reversed', () => {
    const b = encode([['u', 'UUID']], [{ u: '01234567-89ab-cdef-0123-456789abcdef' }]);
    expect(hex(b)).to.equal('efcdab8967452301' + 'efcdab8967452301');
  });

  it('writes DateTime as seconds and DateTime64(3) as milliseconds, from numbers or "s.mmm"', () => {
    expect(hex(encode([['t', "DateTime('UTC')"]], [{ t: 1 }]))).to.equal('01000000');
    expect(hex(encode([['t', "DateTime64(3, 'UTC')"]], [{ t: '1.5' }]))).to.equal('dc05000000000000');
    expect(hex(encode([['t', 'DateTime64(3)']], [{ t: '2.007' }]))).to.equal('d707000000000000');
    expect(hex(encode([['t', "DateTime64(3, 'UTC')"]], [{ t: 2 }]))).to.equal('d007000000000000');
  });

  it('writes Nullable with its flag byte and LowCardinality as its inner type', () => {
    const cols: [string, string][] = [
      ['n', "Nullable(DateTime('UTC'))"],
      ['l', 'LowCardinality(String)'],
    ];
    expect(hex(encode(cols, [{ n: null, l: 'a' }]))).to.equal('01' + '0161');
    expect(hex(encode(cols, [{ n: 1, l: 'a' }]))).to.equal('0001000000' + '0161');
  });

  it('writes rows one after another in the column order given', () => {
    const b = encode(
      [
        ['b', 'UInt8'],
        ['a', 'String'],
      ],
      [
        { a: 'x', b: 1 },
        { a: 'y', b: 2 },
      ],
    );
    expect(hex(b)).to.equal('010178' + '020179');
  });

  it('grows its buffer past the first guess', () => {
    const rows = Array.from({ length: 3 }, () => ({ s: 'z'.repeat(5000) }));
    expect(encode([['s', 'String']], rows).length).to.equal(3 * 5002);
  });

  it('refuses a value that does not fit its column, naming the column (classified as rejected rows)', () => {
    const bad: [string, unknown][] = [
      ['UInt8', 256],
      ['UInt8', -1],
      ['UInt16', 1.5],
      ['UInt32', '7'],
      ['String', 7],
      ['String', undefined],
      ['UUID', 'not-a-uuid'],
      ["DateTime('UTC')", -1],
      ["DateTime64(3, 'UTC')", 'yesterday'],
      ['UInt64', '18446744073709551616'],
      ['Float64', 'NaN'],
      ['Bool', 1],
    ];
    for (const [type, value] of bad) {
      let err: unknown;
      try {
        encode([['c', type]], [{ c: value }]);
      } catch (e) {
        err = e;
      }
      expect(err, `${type} ${String(value)}`).to.be.instanceOf(RowEncodingError);
      expect((err as Error).message).to.contain(`column c (${type})`);
      expect(classifyInsertError(err)).to.equal('rejected');
    }
  });

  it('has no encoder for a table with a type it does not write', () => {
    for (const type of ['Array(String)', 'Map(String, String)', "Enum8('a' = 1)", 'Decimal(9, 2)', 'FixedString(4)']) {
      expect(typeWriter(type), type).to.equal(undefined);
      expect(rowBinaryEncoder([{ name: 'c', type }])).to.equal(undefined);
    }
  });
});
