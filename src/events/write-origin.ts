// What a write through the API adds to its own transaction for the change feed: only a mark of who made it (the
// key and the request), which capture reads beside the transaction's changes and puts on their events as
// `origin` (capture/change-capture.ts). The events themselves are made from the committed changes, outside
// the write's transaction: a write holds no lock for its event and waits for no other write's.
// The mark goes out as the first CTE of the write's tail, with the write's other uniform parts (write-engine.ts).
import { type AliasedRawBuilder, type RawBuilder, sql } from 'kysely';
import { unlessNoneProve } from '../infra/db/statements/belief-check.ts';
import { everyMeaning } from '../infra/db/statements/send-ahead.ts';
import { composedShape, plainValues, type Shaped } from '../infra/db/statements/sql-shape.ts';
import type { StatementTail } from '../resources/descriptor.ts';
import type { Beside, WriteParts, WrittenBeside } from '../resources/engines/write-engine.ts';
import { apiOriginText } from './capture/change-events.ts';

/** What a write tells capture once it committed (the embedded database's capture then looks at once). */
export type WriteCommitted = () => void;

/** The tail's SQL: the mark, each part as a CTE, and a column per checked part that fails the statement when the part
 *  returned no row (a division by zero, which that part's meaning names). */
const tailSql =
  (checked: readonly boolean[]) =>
  ([, ...besides]: RawBuilder<unknown>[], [values]: (readonly unknown[])[]): StatementTail => {
    const ctes: (readonly [string, RawBuilder<unknown>])[] = [['origin', sql`SELECT balcao_mark_origin(${values?.[0]}) AS mark`]];
    const columns: AliasedRawBuilder<unknown, string>[] = [sql`(SELECT count(*) FROM origin)`.as('recorded')];
    besides.forEach((beside, i) => {
      ctes.push([`beside_${i}`, beside]);
      if (checked[i]) columns.push(unlessNoneProve(sql<number>`(SELECT count(*) FROM ${sql.ref(`beside_${i}`)})`).as(`held_${i}`));
    });
    return { ctes, columns };
  };

/** The mark's CTE and what goes beside it, as a shape. */
export function originShape(origin: string, besides: readonly Beside[]): Shaped<StatementTail> {
  const checked = besides.map((b) => b.checked === true);
  const key = `origin${checked.map((c) => (c ? '!' : '.')).join('')}`;
  return composedShape(key, [plainValues(origin), ...besides.map((b) => b.shape)], tailSql(checked));
}

/** The uniform parts of one request's writes: its transaction marked with its key and request id, and `besides`. */
export const originMarker = (committed: WriteCommitted) => {
  return (keyId: string | null, requestId: string, besides: readonly WrittenBeside[] = []): WriteParts => {
    const origin = apiOriginText(keyId, requestId);
    return (written) => {
      const parts = besides.map((beside) => beside(written));
      return {
        shape: originShape(origin, parts),
        meaning: everyMeaning(parts.flatMap((b) => (b.meaning ? [b.meaning] : []))),
        committed,
      };
    };
  };
};
