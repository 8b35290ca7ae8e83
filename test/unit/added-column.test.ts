import { expect } from 'chai';
import { addedColumn } from '@telemetry/platform';

describe('addedColumn (a cluster migration whose ADD COLUMN failed is done when the column is there)', () => {
  it('names the table and column of an ADD COLUMN, quoted or not, and nothing else', () => {
    expect(addedColumn("ALTER TABLE `db`.events ADD COLUMN os String DEFAULT ''")).to.deep.equal({
      table: 'events',
      column: 'os',
    });
    expect(addedColumn('ALTER TABLE `db`.`checks` ADD COLUMN `detail` String')).to.deep.equal({
      table: 'checks',
      column: 'detail',
    });
    expect(addedColumn('ALTER TABLE `db`.events DROP COLUMN os')).to.equal(undefined);
    expect(addedColumn('CREATE TABLE `db`.x (a UInt8) ENGINE = Memory')).to.equal(undefined);
  });
});
