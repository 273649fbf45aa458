// The operator audit log (issue 50 C), through the real `balcao` command on both engines: every command that
// changes an account or a key records who ran it (--actor, BALCAO_ACTOR, or the OS user), the command, the target
// and what changed, never a secret; `balcao audit list` shows it, filtered by account and time; the database
// refuses to change or delete an entry.
import assert from 'node:assert/strict';
import os from 'node:os';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../src/infra/db/engine/database.ts';
import { balcao, balcaoJson, type ScratchEnv, scratchEnv } from './helpers/cli.ts';

let scratch: ScratchEnv;
let env: Record<string, string>;
before(async () => {
  scratch = await scratchEnv();
  env = scratch.env;
});
after(async () => scratch?.cleanup());

describe('the operator audit log', () => {
  let accountId: string;
  let keyId: string;
  let secret: string;
  let startedAt: string;

  before(async () => {
    startedAt = new Date(Date.now() - 1000).toISOString();
    accountId = (await balcaoJson(['accounts', 'create', '--name', 'Clínica Auditada', '--plan', 'starter', '--actor', 'alice'], env)).id;
    await balcaoJson(['accounts', 'update', accountId, '--plan', 'pro', '--read-only'], { ...env, BALCAO_ACTOR: 'bob' });
    const key = await balcaoJson(['keys', 'create', '--account', accountId, '--name', 'ERP', '--scopes', 'customers:read'], env);
    keyId = key.id;
    secret = key.key;
    await balcaoJson(['keys', 'revoke', keyId, '--actor', 'carol'], { ...env, BALCAO_ACTOR: 'not-this-one' });
    await balcaoJson(['accounts', 'create', '--name', 'Outra Conta', '--actor', 'alice'], env);
  });

  it('records each change: who, the command, the target and what changed; --json prints one object', async () => {
    const listed = await balcao(['audit', 'list', '--account', accountId, '--json'], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(listed.stdout.trim().split('\n').length, 1, 'exactly one JSON object on stdout');
    const { data, ...rest } = JSON.parse(listed.stdout);
    assert.deepEqual(rest, {});
    assert.deepEqual(
      data.map((e: any) => [e.actor, e.command, e.target_type, e.target_id, e.account_id]),
      [
        ['alice', 'accounts create', 'account', accountId, accountId],
        ['bob', 'accounts update', 'account', accountId, accountId],
        [os.userInfo().username, 'keys create', 'api_key', keyId, accountId],
        ['carol', 'keys revoke', 'api_key', keyId, accountId],
      ],
    );
    const [created, updated, keyCreated, revoked] = data;
    assert.deepEqual(created.changes.name, { from: null, to: 'Clínica Auditada' });
    assert.deepEqual(created.changes.plan_code, { from: null, to: 'starter' });
    // Only what the update changed: the plan (and with it the effective limits) and the read-only rule.
    assert.deepEqual(Object.keys(updated.changes).sort(), ['plan_code', 'rate_limits', 'read_only']);
    assert.deepEqual(updated.changes.plan_code, { from: 'starter', to: 'pro' });
    assert.deepEqual(updated.changes.read_only, { from: false, to: true });
    assert.deepEqual(keyCreated.changes.scopes, { from: null, to: ['customers:read'] });
    assert.deepEqual(Object.keys(revoked.changes), ['revoked_at']);
    assert.equal(revoked.changes.revoked_at.from, null);
    for (const entry of data) assert.ok(!Number.isNaN(Date.parse(entry.at)));
    // Never the key, nor any part of its secret.
    assert.ok(!listed.stdout.includes(secret));
    assert.ok(!listed.stdout.includes(secret.slice(-12)));
    assert.ok(!/last4|secret|hash/.test(listed.stdout));
  });

  it('lists every account without --account, and only later entries with --since', async () => {
    const all = await balcaoJson(['audit', 'list'], env);
    assert.ok(all.data.length >= 5);
    assert.ok(all.data.some((e: any) => e.account_id !== accountId && e.command === 'accounts create'));
    assert.equal((await balcaoJson(['audit', 'list', '--since', startedAt, '--account', accountId], env)).data.length, 4);
    assert.deepEqual((await balcaoJson(['audit', 'list', '--since', '2999-01-01'], env)).data, []);
    const text = await balcao(['audit', 'list', '--account', accountId], env);
    assert.match(text.stdout, /carol keys revoke api_key/);
  });

  it('refuses a bad --since or --account with one line on stderr', async () => {
    for (const args of [
      ['audit', 'list', '--since', 'yesterday'],
      ['audit', 'list', '--account', 'nope'],
    ]) {
      const r = await balcao([...args, '--json'], env);
      assert.notEqual(r.code, 0);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
  });

  it('a failed command records nothing', async () => {
    const before = (await balcaoJson(['audit', 'list'], env)).data.length;
    const r = await balcao(['keys', 'revoke', '00000000-0000-4000-8000-000000000000', '--json'], env);
    assert.notEqual(r.code, 0);
    assert.equal((await balcaoJson(['audit', 'list'], env)).data.length, before);
  });

  it('the database refuses to change, delete or truncate an entry', async () => {
    const database = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir: env.BALCAO_DATA_DIR as string }, 'test');
    try {
      for (const statement of [
        sql`UPDATE operator_audit SET actor = 'mallory'`,
        sql`DELETE FROM operator_audit`,
        sql`TRUNCATE operator_audit`,
      ]) {
        await assert.rejects(statement.execute(database.db), /append-only/);
      }
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM operator_audit WHERE actor = 'mallory'`.execute(database.db);
      assert.equal(rows[0]!.n, 0);
    } finally {
      await database.close();
    }
  });
});
