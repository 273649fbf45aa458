// What a write through the API adds to its own transaction for the change feed: only a mark of who made it (the
// key and the request), which capture reads beside the transaction's changes and puts on their events as
// `origin` (capture/change-capture.ts). The events themselves are made from the committed changes, outside
// the write's transaction: a write holds no lock for its event and waits for no other write's.
// The mark goes out as one more CTE of a statement the write sends anyway (its insert, or its write-log entry).
import { type RawBuilder, sql } from 'kysely';
import { everyMeaning, sendAhead } from '../infra/db/send-ahead.ts';
import { compiledShape, composedShape, plainValues, type Shaped, type SqlShape } from '../infra/db/sql-shape.ts';
import type { StatementTail } from '../resources/descriptor.ts';
import type { AfterCommit, Beside, JoinedWrite, WrittenBeside, WrittenExtensions, WrittenRecord } from '../resources/write-engine.ts';
import { apiOriginText } from './capture/change-events.ts';

/** The statement cache's owner of the origin statements' shapes. */
export const ORIGIN_STATEMENT = { statement: 'origin' };

/** What a write tells capture once it committed (the embedded database's capture then looks at once). */
export type WriteCommitted = () => void;

const originSql = ([, ...besides]: RawBuilder<unknown>[], [values]: (readonly unknown[])[]): StatementTail => {
  const ctes: (readonly [string, RawBuilder<unknown>])[] = [['origin', sql`SELECT balcao_mark_origin(${values?.[0]}) AS mark`]];
  besides.forEach((beside, i) => {
    ctes.push([`beside_${i}`, beside]);
  });
  return { ctes, columns: [sql`(SELECT count(*) FROM origin)`.as('recorded')] };
};

/** The mark's CTE and what goes beside it, as a shape. */
export function originShape(origin: string, besides: readonly Beside[]): Shaped<StatementTail> {
  return composedShape('origin', [plainValues(origin), ...besides.map((b) => b.shape)], originSql);
}

const ownStatement = ({ ctes, columns }: StatementTail): RawBuilder<unknown> =>
  sql`WITH ${sql.join(
    ctes.map(([name, cte]) => sql`${sql.ref(name)} AS (${cte})`),
    sql`, `,
  )} SELECT ${sql.join(columns)}`;

const ownStatementShape = (tail: Shaped<StatementTail>): SqlShape => ({
  key: tail.key,
  values: tail.values,
  build: (v) => ownStatement(tail.build(v)),
});

/** The mark and what goes beside it as a statement of its own. */
export const originStatementShape = (origin: string, besides: readonly Beside[]): SqlShape =>
  ownStatementShape(originShape(origin, besides));

/** The write extensions of one request: its transaction marked with its key and request id. */
export const originMarker = (committed: WriteCommitted) => {
  return (keyId: string | null, requestId: string, besides: readonly WrittenBeside[] = []): WrittenExtensions => {
    const origin = apiOriginText(keyId, requestId);
    const prepare = (written: WrittenRecord): JoinedWrite => {
      const parts = besides.map((beside) => beside(written));
      return {
        shape: originShape(origin, parts),
        meaning: everyMeaning(parts.flatMap((b) => (b.meaning ? [b.meaning] : []))),
        committed: () => committed(),
      };
    };
    return {
      onWritten: async (trx, written): Promise<AfterCommit> => {
        const marked = prepare(written);
        // Built and compiled once per shape; sent with what follows (a failure still fails the write).
        await sendAhead(trx, compiledShape(trx, ORIGIN_STATEMENT, ownStatementShape(marked.shape)), marked.meaning);
        return () => marked.committed(undefined);
      },
      joinWritten: prepare,
    };
  };
};
