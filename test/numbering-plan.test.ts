// The sale number's statement (the sale's INSERT) keeps its rare path rare. Its scan of every number the tenant stored
// (the largest, for a counter an import overtook) must be a SubPlan of the counter's UPDATE, run only
// when its CASE branch is taken. As an InitPlan PostgreSQL would run it whenever the UPDATE re-checks a
// counter row a concurrent sale changed (EvalPlanQual computes every InitPlan): with sales arriving
// together, nearly every sale, a scan of all the tenant's sales each (docs/performance.md). Shown with
// EXPLAIN on the real database (PGlite or PostgreSQL).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { CompiledQuery } from 'kysely';
import { numberedSaleInsert } from '../src/resources/writes/transaction-number.ts';
import { type TestServer, startTestServer } from './helpers/harness.ts';

type PlanNode = Record<string, any> & { Plans?: PlanNode[] };

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s?.close());

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

const scansStoredNumbers = (n: PlanNode): boolean =>
  [n.Filter, n['Recheck Cond'], n['Index Cond']].some((text) => typeof text === 'string' && text.includes('transaction_number ~'));

test('the counter UPDATE scans the stored numbers only through a SubPlan, never an InitPlan', async () => {
  const account = await s.createAccount();
  const sale = { id: randomUUID(), transaction_type: 'sale', status: 'pending', created_at: new Date().toISOString() };
  const followUps = {
    history: { transaction_id: sale.id, old_status: null, new_status: 'pending', change_reason: null, created_at: sale.created_at },
    items: { columns: ['id', 'transaction_id'], rows: [{ id: randomUUID(), transaction_id: sale.id }] },
  };
  const statement = numberedSaleInsert(s.db, { accountId: account.id, mode: 'live' } as never, sale, false, followUps);
  const { rows } = await s.db.executeQuery<{ 'QUERY PLAN': unknown }>(
    CompiledQuery.raw(`explain (format json) ${statement.sql}`, [...statement.parameters]),
  );
  const raw = rows[0]!['QUERY PLAN'];
  const plan = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: PlanNode }[];
  const bumped = nodes(plan[0]!.Plan).find((n) => n['Subplan Name'] === 'CTE bumped');
  assert.ok(bumped, 'the plan has the counter UPDATE (CTE bumped)');
  const inBumped = nodes(bumped);
  assert.ok(inBumped.some(scansStoredNumbers), 'the UPDATE holds the scan of stored numbers');
  const initPlans = inBumped.filter((n) => String(n['Subplan Name'] ?? '').startsWith('InitPlan'));
  assert.deepEqual(
    initPlans.map((n) => n['Subplan Name']),
    [],
    'no InitPlan in the counter UPDATE: EvalPlanQual would run it on every concurrent sale',
  );
  const scanParents = inBumped.filter((n) => String(n['Subplan Name'] ?? '').startsWith('SubPlan') && nodes(n).some(scansStoredNumbers));
  assert.equal(scanParents.length, 1, 'the scan sits under one SubPlan');
});

test('a write transaction runs its prepared statements on their generic plan from the first execution', async () => {
  // Left to choose, PostgreSQL planned a sale's statement again at about one execution in three, for more CPU than
  // the rest of the sale (docs/performance.md). PGlite prepares no named statements: each is planned once, as sent.
  const account = await s.createAccount();
  const tenant = { accountId: account.id, mode: 'live' } as never;
  const plans = await s.db.transaction().execute(async (trx) => {
    for (let i = 0; i < 7; i++) {
      const sale = { id: randomUUID(), transaction_type: 'sale', status: 'pending', created_at: new Date().toISOString() };
      const followUps = {
        history: { transaction_id: sale.id, old_status: null, new_status: 'pending', change_reason: null, created_at: sale.created_at },
        items: { columns: ['id', 'transaction_id'], rows: [] },
      };
      await trx.executeQuery(numberedSaleInsert(trx, tenant, sale, false, followUps));
    }
    const { rows } = await trx.executeQuery<{ generic_plans: number; custom_plans: number }>(
      CompiledQuery.raw(
        `select generic_plans::int as generic_plans, custom_plans::int as custom_plans from pg_prepared_statements where statement like 'with "bumped"%'`,
      ),
    );
    const citus = await trx.executeQuery<{ citus: boolean }>(
      CompiledQuery.raw(`select exists (select 1 from pg_extension where extname = 'citus') as citus`),
    );
    return { rows, citus: citus.rows[0]?.citus === true };
  });
  // Citus makes no generic plan of a statement that reads a distributed table: there PostgreSQL still chooses.
  if (!process.env.TEST_DATABASE_URL) assert.deepEqual(plans.rows, []);
  else if (plans.citus) assert.deepEqual(plans.rows, [{ generic_plans: 0, custom_plans: 7 }]);
  else assert.deepEqual(plans.rows, [{ generic_plans: 7, custom_plans: 0 }]);
  const numbers = await s.db
    .selectFrom('transactions')
    .select('transaction_number')
    .where('team_id', '=', account.id)
    .orderBy('transaction_number')
    .execute();
  assert.deepEqual(
    numbers.map((n) => n.transaction_number),
    ['1', '2', '3', '4', '5', '6', '7'],
  );
});
