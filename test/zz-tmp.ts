import { startTestServer } from './helpers/harness.ts';
import { insertRow } from './helpers/read-data.ts';
import { randomUUID } from 'node:crypto';
const s = await startTestServer();
const { key } = await s.createAccountWithKey();
const other = await s.createAccountWithKey();
const theirs = await insertRow(s.db, 'customers', { teamId: other.account.id, mode: 'live' }, { full_name: 'Alheio' });
console.log('inserted');
for (const id of [randomUUID(), 'not-a-uuid', '123', theirs.id, `${theirs.id}x`, 'DROP%20TABLE']) {
  const res = await s.request('GET', `/v1/customers/${id}`, { key });
  console.log(id, res.status);
}
await s.close();
