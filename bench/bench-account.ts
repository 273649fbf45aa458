// Shared by the benchmarks: an account whose limits never interfere, with a `*:read` key.
import { createAccount } from '../src/accounts/account-repository.ts';
import { createKey } from '../src/accounts/key-repository.ts';
import { MODULES } from '../src/domain/modules.ts';
import type { Db } from '../src/infra/db/engine/database.ts';

const UNLIMITED = { burst_per_second: 1e9, requests_per_minute_read: 1e9, requests_per_minute_write: 1e9, requests_per_day_total: 1e9 };

export async function benchAccount(db: Db, brand: string): Promise<{ accountId: string; key: string }> {
  const account = await createAccount(db, {
    name: 'bench',
    plan_code: 'enterprise',
    modules: [...MODULES],
    rate_limit_overrides: UNLIMITED,
  });
  const { key } = await createKey(db, {
    accountId: account.id,
    name: 'bench',
    mode: 'live',
    scopes: ['*:read'],
    allowedIps: [],
    expiresAt: null,
    brand,
  });
  return { accountId: account.id, key };
}
