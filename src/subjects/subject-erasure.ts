// `balcao subjects erase` (LGPD art. 18, erasure): anonymises one customer of an account in one transaction. Their
// personal fields become null or a placeholder; the free text of their sales (with items and status history),
// appointments and deals is cleared; amounts, dates, numbers and statuses are untouched. What other stored text
// holds them is redacted: the stored responses of Idempotency-Keys, the write log (/v1/requests), the change feed's
// payloads and webhook receivers' recorded answers. Recorded in the operator audit log. A second run changes nothing.
// The rows change through plain UPDATEs: the change feed (change-data capture) is its own concern.
import { ERASURE_ORIGIN, MARKS_TABLE } from '../events/capture/setup.ts';
import { sql } from 'kysely';
import { recordAudit } from '../accounts/operator-audit.ts';
import type { Tenant } from '../domain/tenant.ts';
import type { Db } from '../infra/db/engine/database.ts';
import { insertScoped, selectScoped, updateScoped } from '../infra/db/tenancy/tenancy.ts';
import { ERASED_CUSTOMER, FREE_TEXT, identifiersOf, mentionsAny, redactDocument, redactText } from './personal-data.ts';
import { subjectRecords } from './subject-records.ts';

export interface ErasureResult {
  customer_id: string;
  /** False when the customer was anonymised already and nothing was left to change. */
  changed: boolean;
  /** The customer's fields that changed (names only). */
  customer_fields: string[];
  /** Records whose free text was cleared, by table. */
  cleared: Record<string, number>;
  /** Stored text redacted (or removed) elsewhere. */
  redacted: {
    idempotency_responses: number;
    idempotency_keys_removed: number;
    request_log: number;
    events: number;
    webhook_attempts: number;
  };
}

type Row = Record<string, unknown>;

export async function eraseSubject(
  db: Db,
  tenant: Tenant,
  customerId: string,
  audit: { actor: string; reason?: string },
): Promise<ErasureResult | undefined> {
  return db.transaction().execute(async (tx) => {
    // The customer's row is locked first: two erasures of one person run one after the other.
    const locked = await selectScoped(tx, 'customers', tenant).select('id').where('id', '=', customerId).forUpdate().executeTakeFirst();
    if (!locked) return undefined;
    // Marked for the change capture: the events of the erasure withhold the old values (docs/operations.md).
    await sql`SELECT balcao_mark_origin(${ERASURE_ORIGIN})`.execute(tx);
    await insertScoped(tx, MARKS_TABLE, tenant, { origin: ERASURE_ORIGIN }).execute();
    const records = (await subjectRecords(tx, tenant, customerId))!;
    const identifiers = identifiersOf(records.customer);

    const customerFields = Object.entries(ERASED_CUSTOMER)
      .filter(([field, erased]) => (records.customer[field] ?? null) !== erased)
      .map(([field]) => field);
    if (customerFields.length)
      await updateScoped(tx, 'customers', tenant)
        .set({ ...ERASED_CUSTOMER, updated_at: sql`now()` })
        .where('id', '=', customerId)
        .execute();

    const cleared: Record<string, number> = {};
    const rowsOf: Record<string, Row[]> = {
      transactions: records.sales,
      transaction_items: records.sales.flatMap((s) => s.items),
      transaction_status_history: records.sales.flatMap((s) => s.status_history),
      appointments: records.appointments,
      deals: records.deals,
    };
    for (const [table, fields] of Object.entries(FREE_TEXT)) {
      const ids = rowsOf[table]!.filter((row) => fields.some((f) => row[f] !== null && row[f] !== undefined)).map(
        (row) => row.id as string,
      );
      cleared[table] = ids.length;
      if (!ids.length) continue;
      const touched = table === 'transaction_items' || table === 'transaction_status_history' ? {} : { updated_at: sql`now()` };
      await updateScoped(tx, table, tenant)
        .set({ ...Object.fromEntries(fields.map((f) => [f, null])), ...touched })
        .where('id', 'in', ids)
        .execute();
    }

    const redacted = await redactStoredText(tx, tenant, customerId, identifiers);
    const changed = customerFields.length > 0 || Object.values(cleared).some((n) => n > 0) || Object.values(redacted).some((n) => n > 0);
    const result: ErasureResult = { customer_id: customerId, changed, customer_fields: customerFields, cleared, redacted };
    await recordAudit(tx, {
      actor: audit.actor,
      command: 'subjects erase',
      accountId: tenant.accountId,
      targetType: 'customer',
      targetId: customerId,
      changes: {
        mode: tenant.mode,
        changed,
        customer_fields: customerFields,
        cleared,
        redacted,
        // The operator's reason may name the person too.
        reason: audit.reason === undefined ? null : redactText(audit.reason, identifiers),
      },
    });
    return result;
  });
}

/** Idempotency-Keys' stored responses, the write log, event payloads and webhook answers that name the person. */
async function redactStoredText(
  tx: Db,
  tenant: Tenant,
  customerId: string,
  identifiers: readonly string[],
): Promise<ErasureResult['redacted']> {
  const redacted = { idempotency_responses: 0, idempotency_keys_removed: 0, request_log: 0, events: 0, webhook_attempts: 0 };
  const needles = [customerId, ...identifiers];

  // Idempotency-Keys belong to API keys, not to the tenant's tables: the account's keys of the tenant's mode. A key
  // whose own text names the person is removed; a response that does is rewritten as the erased records read.
  const stored = await tx
    .selectFrom('idempotency_keys as ik')
    .innerJoin('api_keys as k', 'k.id', 'ik.api_key_id')
    .select(['ik.api_key_id', 'ik.idempotency_key', 'ik.response_body'])
    .where('k.account_id', '=', tenant.accountId)
    .where('k.mode', '=', tenant.mode)
    .where((eb) =>
      eb.or([eb(mentionsSql('ik.response_body', needles), '=', true), eb(mentionsSql('ik.idempotency_key', needles), '=', true)]),
    )
    .execute();
  for (const row of stored) {
    const where = (q: any) => q.where('api_key_id', '=', row.api_key_id).where('idempotency_key', '=', row.idempotency_key);
    if (identifiers.length && mentionsAny(row.idempotency_key, identifiers)) {
      await where(tx.deleteFrom('idempotency_keys')).execute();
      redacted.idempotency_keys_removed += 1;
      continue;
    }
    const body = row.response_body === null ? null : redactStored(row.response_body, customerId, identifiers);
    if (body === row.response_body) continue;
    await where(tx.updateTable('idempotency_keys').set({ response_body: body })).execute();
    redacted.idempotency_responses += 1;
  }

  if (identifiers.length) {
    const logged = await selectScoped(tx, 'request_log', tenant)
      .select(['id', 'request_id', 'idempotency_key', 'path'])
      .where((eb: any) => eb.or(['request_id', 'idempotency_key', 'path'].map((c) => eb(mentionsSql(c, identifiers), '=', true))))
      .execute();
    for (const entry of logged) {
      await updateScoped(tx, 'request_log', tenant)
        .set({
          request_id: redactText(entry.request_id, identifiers),
          idempotency_key: entry.idempotency_key === null ? null : redactText(entry.idempotency_key, identifiers),
          path: redactText(entry.path, identifiers),
        })
        .where('id', '=', entry.id)
        .execute();
    }
    redacted.request_log = logged.length;

    const attempts = await selectScoped(tx, 'webhook_attempts', tenant)
      .select(['id', 'response_body'])
      .where(mentionsSql('response_body', identifiers))
      .execute();
    for (const attempt of attempts) {
      await updateScoped(tx, 'webhook_attempts', tenant)
        .set({ response_body: redactText(attempt.response_body, identifiers) })
        .where('id', '=', attempt.id)
        .execute();
    }
    redacted.webhook_attempts = attempts.length;
  }

  // The change feed's payloads (json) of the person's records, as they would read after the erasure, and the request
  // ids (a client's own X-Request-Id) that name them.
  const events = await selectScoped(tx, 'events', tenant)
    .select(['id', 'request_id', sql<string>`data::text`.as('data_text'), sql<string | null>`origin::text`.as('origin_text')])
    .where((eb: any) =>
      eb.or([
        eb(mentionsSql('data', needles, '::text'), '=', true),
        eb(mentionsSql("coalesce(request_id, '')", needles), '=', true),
        eb(mentionsSql("coalesce(origin::text, '')", needles), '=', true),
      ]),
    )
    .execute();
  for (const event of events) {
    const data = redactStored(event.data_text, customerId, identifiers);
    const requestId = event.request_id === null ? null : redactText(event.request_id, identifiers);
    // The origin names the request too (its X-Request-Id).
    const origin = event.origin_text === null ? null : redactText(event.origin_text, identifiers);
    if (data === event.data_text && requestId === event.request_id && origin === event.origin_text) continue;
    await updateScoped(tx, 'events', tenant)
      .set({ data: sql`cast(cast(${data} as text) as json)`, request_id: requestId, origin: sql`cast(cast(${origin} as text) as json)` })
      .where('id', '=', event.id)
      .execute();
    redacted.events += 1;
  }
  // The embedded database's change log (changes not yet made events): its rows would become events after the
  // erasure, with the person's data.
  const pending = await sql<{ seq: number; old_text: string | null; new_text: string | null }>`
    SELECT seq, old_row::text AS old_text, new_row::text AS new_text FROM capture_outbox
    WHERE ${mentionsSql("coalesce(old_row::text, '')", needles)} OR ${mentionsSql("coalesce(new_row::text, '')", needles)}`.execute(tx);
  for (const row of pending.rows) {
    const redact = (text: string | null) => (text === null ? null : redactText(text, identifiers));
    await sql`UPDATE capture_outbox SET old_row = cast(cast(${redact(row.old_text)} as text) as jsonb),
      new_row = cast(cast(${redact(row.new_text)} as text) as jsonb) WHERE seq = ${row.seq}`.execute(tx);
  }
  return redacted;
}

/** `column` (cast as `cast`) contains one of `needles`, in any letter case. */
function mentionsSql(column: string, needles: readonly string[], cast = '') {
  const text = sql.raw(`lower(${column}${cast})`);
  return sql<boolean>`(${sql.join(
    needles.map((n) => sql`strpos(${text}, lower(${n})) > 0`),
    sql` OR `,
  )})`;
}

/** A stored JSON text as it reads after the erasure (plain text when it is not JSON). */
function redactStored(text: string, customerId: string, identifiers: readonly string[]): string {
  try {
    return JSON.stringify(redactDocument(JSON.parse(text), customerId, identifiers));
  } catch {
    return redactText(text, identifiers);
  }
}
