// Both drivers read timestamptz as the API prints it (UTC ISO 8601, milliseconds): the same instant,
// to the millisecond, as `new Date(text)` gave before, for every form PostgreSQL prints.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { isoTimestamp } from '../src/infra/db/engine/timestamp-text.ts';
import { openTestDatabase } from './helpers/harness.ts';

let database: Awaited<ReturnType<typeof openTestDatabase>>;
before(async () => {
  database = await openTestDatabase();
});
after(() => database.drop());

test('every fraction length, none, the epoch and the far years read as the instant, to the millisecond', async () => {
  const cases: [string, string][] = [
    ['2026-11-22 10:11:12.123456+00', '2026-11-22T10:11:12.123Z'],
    ['2026-11-22 10:11:12.999999+00', '2026-11-22T10:11:12.999Z'],
    ['2026-11-22 10:11:12.5+00', '2026-11-22T10:11:12.500Z'],
    ['2026-11-22 10:11:12.05+00', '2026-11-22T10:11:12.050Z'],
    ['2026-11-22 10:11:12+00', '2026-11-22T10:11:12.000Z'],
    ['2026-11-22 07:11:12.25-03', '2026-11-22T10:11:12.250Z'],
    ['1970-01-01 00:00:00+00', '1970-01-01T00:00:00.000Z'],
    ['0001-01-01 00:00:00+00', '0001-01-01T00:00:00.000Z'],
    ['9999-12-31 23:59:59.999+00', '9999-12-31T23:59:59.999Z'],
  ];
  for (const [literal, iso] of cases) {
    // A literal in the text: what is read back is the driver's parsing alone.
    const { rows } = await sql<{ at: unknown }>`select cast(${sql.lit(literal)} as timestamptz) as at`.execute(database.db);
    assert.equal(rows[0]?.at, iso, literal);
  }
});

test('a year past 9999 goes through Date; text Date cannot read (BC, infinity) stays as it is', async () => {
  const { rows } = await sql<{ far: unknown; bc: unknown; inf: unknown }>`
    select cast('12026-01-02 03:04:05.678+00' as timestamptz) as far, cast('0044-03-15 12:00:00+00 BC' as timestamptz) as bc,
           cast('infinity' as timestamptz) as inf`.execute(database.db);
  assert.equal(rows[0]?.far, '+012026-01-02T03:04:05.678Z');
  assert.equal(rows[0]?.bc, '0044-03-15 12:00:00+00 BC', 'no API input reaches BC; Date cannot read it');
  assert.equal(rows[0]?.inf, 'infinity');
  // Another session time zone prints another offset: read through Date, the instant is the same.
  assert.equal(isoTimestamp('2026-11-22 13:11:12.123+03'), '2026-11-22T10:11:12.123Z');
});
