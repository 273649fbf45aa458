import { openDatabase } from '../src/infra/db/database.ts';
import { inBulkTransaction } from '../src/import/bulk-session.ts';
import fs from 'node:fs';
const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: '' });
await db.driver.sql.unsafe('truncate customers cascade');
const lines = fs.readFileSync('/tmp/imp2/customers.copy', 'utf8').split('\n').filter(Boolean);
const cols = ['team_id','mode','id','full_name','email','phone','document','is_active','address_city','address_state','created_at'];
const per = Number(process.argv[2]);
const t0 = performance.now();
await inBulkTransaction(db.driver, async (s) => {
  for (let i = 0; i < lines.length; i += per) await s.copyIn('customers', cols, lines.slice(i, i + per).join('\n') + '\n');
});
console.log(per, ((performance.now() - t0) / 1000).toFixed(2), 's');
await db.close();
