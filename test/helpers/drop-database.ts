// Dropping a test database on PostgreSQL once nothing replicates from it.
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';

/**
 * Drops `name` (connected through `adminUrl`). A server's change capture holds a replication slot of its database,
 * and the session reading it ends on the server a moment after the client closed it: PostgreSQL refuses to drop a
 * database whose slot is still active, which WITH (FORCE) does not lift. The test is done with the database, so such
 * a session is ended, and the drop waits (bounded) until its slot is free.
 */
export async function dropTestDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const [row] = await admin<{ active: number }[]>`
        SELECT count(pg_terminate_backend(active_pid))::int AS active FROM pg_replication_slots
        WHERE database = ${name} AND active_pid IS NOT NULL`;
      if (!row?.active || Date.now() > deadline) break;
      await sleep(50);
    }
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
