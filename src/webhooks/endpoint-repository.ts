// Webhook endpoints of a tenant in the database: at most MAX_ENDPOINTS per account and mode,
// secrets written here and returned only by creation and rotation.
import type { Static } from '@sinclair/typebox';
import { sql } from 'kysely';
import { AppError, errors } from '../errors/app-error.ts';
import type { Tenant } from '../domain/tenant.ts';
import type { Db } from '../infra/db/engine/database.ts';
import { EVENTS_COUNTER } from '../domain/numbering.ts';
import { conditionScopedSql, deleteScoped, insertScoped, selectScoped, TENANT_COLUMNS, updateScoped } from '../infra/db/tenancy/tenancy.ts';
import { outputRow } from '../query/output.ts';
import { rowMeta } from '../query/row-meta.ts';
import { isUuid } from '../schemas/formats.ts';
import { type createWebhookEndpointBody, MAX_ENDPOINTS, type updateWebhookEndpointBody, webhookEndpointRow } from './endpoint-schema.ts';
import { newSecret } from './signing.ts';
import type { Row } from '../infra/db/engine/row.ts';

export type WebhookEndpoint = Static<typeof webhookEndpointRow>;
type CreateBody = Static<typeof createWebhookEndpointBody>;
type UpdateBody = Static<typeof updateWebhookEndpointBody>;

/** How long the secret replaced by a rotation keeps signing. */
export const ROTATION_OVERLAP_HOURS = 24;

const meta = rowMeta(webhookEndpointRow);
const view = (row: Row) => outputRow(row, meta.fields, meta) as WebhookEndpoint;
const textArray = (values: readonly string[]) =>
  values.length === 0 ? sql`cast(ARRAY[] as text[])` : sql`cast(ARRAY[${sql.join(values.map(String))}] as text[])`;

/** Key ids as stored and compared: lowercase (the events' `origin_key_id` prints so). */
const keyIds = (ids: readonly string[]) => ids.map((id) => id.toLowerCase());

/** The ids of `ids` that name no API key of the tenant's account and mode: a 422 each (never saying whose they are). */
export async function unknownKeyIds(db: Db, tenant: Tenant, ids: readonly string[]): Promise<string[]> {
  const wanted = keyIds(ids);
  if (wanted.length === 0) return [];
  const rows = (await db
    .selectFrom('api_keys')
    .select(sql<string>`cast(id as text)`.as('id'))
    .where('account_id', '=', tenant.accountId)
    .where('mode', '=', tenant.mode as 'live' | 'test')
    .where(sql<boolean>`cast(id as text) in (${sql.join(wanted)})`)
    .execute()) as { id: string }[];
  const known = new Set(rows.map((r) => r.id));
  return wanted.filter((id) => !known.has(id));
}

const limitReached = () =>
  new AppError('validation', {
    detail: `endpoint_limit_reached: an account has at most ${MAX_ENDPOINTS} webhook endpoints per mode; delete one first.`,
  });

/** Serializes the changes of one tenant's endpoints: the limit holds under concurrent POSTs. */
async function lockTenantEndpoints(trx: Db, tenant: Tenant): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtext(${`webhooks:${tenant.accountId}:${tenant.mode}`}))`.execute(trx);
}

/** The tenant's events counter row (made at 0 when it has none yet), locked until commit. */
async function lockEventsCounter(trx: Db, tenant: Tenant): Promise<void> {
  await insertScoped(trx, 'tenant_counters', tenant, { name: EVENTS_COUNTER, value: 0 })
    .onConflict((oc) => oc.columns([...TENANT_COLUMNS, 'name']).doUpdateSet({ value: sql`tenant_counters.value` }))
    .execute();
}

/**
 * Runs `change` with the tenant's endpoints locked. The rows are locked in the order every other writer of them
 * takes: the tenant's events counter row first (the capture's transaction moves it, then reads the endpoints it fans
 * out to), then the endpoint's deliveries, then the endpoint (the delivery worker records an attempt on its
 * delivery, then marks the endpoint). Taken the other way, a change and a capture, or a deletion and an attempt
 * being recorded, could each wait for the other: a deadlock, which PostgreSQL ends after a second by failing one of
 * them (a 500 on the deletion).
 */
function changeEndpoints<T>(db: Db, tenant: Tenant, change: (trx: Db) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await lockTenantEndpoints(trx, tenant);
    await lockEventsCounter(trx, tenant);
    return change(trx);
  });
}

export async function createEndpoint(db: Db, tenant: Tenant, body: CreateBody, beforeCommit?: (trx: Db) => Promise<void>) {
  return changeEndpoints(db, tenant, async (trx) => {
    const { count } = (await selectScoped(trx, 'webhook_endpoints', tenant)
      .select(sql<number>`count(*)`.as('count'))
      .executeTakeFirstOrThrow()) as { count: number };
    if (Number(count) >= MAX_ENDPOINTS) throw limitReached();
    const secret = newSecret();
    const row = (await insertScoped(trx, 'webhook_endpoints', tenant, {
      url: body.url,
      description: body.description ?? null,
      enabled_events: textArray(body.enabled_events ?? ['*']),
      excluded_key_ids: textArray(keyIds(body.excluded_key_ids ?? [])),
      enabled: body.enabled ?? true,
      secret,
    })
      .returningAll()
      .executeTakeFirstOrThrow()) as Row;
    await beforeCommit?.(trx);
    return { ...view(row), secret };
  });
}

export async function listEndpoints(db: Db, tenant: Tenant): Promise<WebhookEndpoint[]> {
  const rows = (await selectScoped(db, 'webhook_endpoints', tenant)
    .select(meta.fields as string[])
    .orderBy('created_at', 'asc')
    .orderBy('id', 'asc')
    .execute()) as Row[];
  return rows.map(view);
}

export async function getEndpoint(db: Db, tenant: Tenant, id: string): Promise<WebhookEndpoint> {
  if (!isUuid(id)) throw errors.notFound();
  const row = (await selectScoped(db, 'webhook_endpoints', tenant)
    .select(meta.fields as string[])
    .where('id', '=', id)
    .executeTakeFirst()) as Row | undefined;
  if (!row) throw errors.notFound();
  return view(row);
}

export async function updateEndpoint(db: Db, tenant: Tenant, id: string, body: UpdateBody): Promise<WebhookEndpoint> {
  if (!isUuid(id)) throw errors.notFound();
  const set: Row = { updated_at: sql`now()` };
  if (body.url !== undefined) set.url = body.url;
  if (body.description !== undefined) set.description = body.description;
  if (body.enabled_events !== undefined) set.enabled_events = textArray(body.enabled_events);
  if (body.excluded_key_ids !== undefined) set.excluded_key_ids = textArray(keyIds(body.excluded_key_ids));
  if (body.enabled !== undefined) {
    set.enabled = body.enabled;
    // Re-enabled by the client: the failure streak starts over.
    if (body.enabled) Object.assign(set, { disabled_reason: null, failing_since: null });
  }
  return changeEndpoints(db, tenant, async (trx) => {
    const row = (await updateScoped(trx, 'webhook_endpoints', tenant).set(set).where('id', '=', id).returningAll().executeTakeFirst()) as
      | Row
      | undefined;
    if (!row) throw errors.notFound();
    return view(row);
  });
}

export async function deleteEndpoint(db: Db, tenant: Tenant, id: string): Promise<void> {
  if (!isUuid(id)) throw errors.notFound();
  await changeEndpoints(db, tenant, async (trx) => {
    // Its deliveries before itself (see changeEndpoints); their attempts go with them (ON DELETE CASCADE).
    await sql`DELETE FROM webhook_deliveries WHERE ${conditionScopedSql({ accountId: tenant.accountId })} AND endpoint_id = ${id}`.execute(
      trx,
    );
    const result = await deleteScoped(trx, 'webhook_endpoints', tenant).where('id', '=', id).executeTakeFirst();
    if (Number(result.numDeletedRows) === 0) throw errors.notFound();
  });
}

export async function rotateSecret(db: Db, tenant: Tenant, id: string, beforeCommit?: (trx: Db) => Promise<void>) {
  if (!isUuid(id)) throw errors.notFound();
  const secret = newSecret();
  return db.transaction().execute(async (trx) => {
    const row = (await updateScoped(trx, 'webhook_endpoints', tenant)
      .set({
        previous_secret: sql`secret`,
        previous_secret_expires_at: sql`now() + interval '${sql.raw(String(ROTATION_OVERLAP_HOURS))} hours'`,
        secret,
        updated_at: sql`now()`,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()) as Row | undefined;
    if (!row) throw errors.notFound();
    await beforeCommit?.(trx);
    return { ...view(row), secret };
  });
}

/** Where and with which secrets a message to the endpoint is sent: its URL, its secret and the previous one while
 *  it still signs after a rotation. */
export async function signingTarget(db: Db, tenant: Tenant, id: string): Promise<{ url: string; secrets: string[] }> {
  if (!isUuid(id)) throw errors.notFound();
  const row = (await selectScoped(db, 'webhook_endpoints', tenant)
    .select([
      'url',
      'secret',
      sql<string | null>`case when previous_secret_expires_at > now() then previous_secret end`.as('previous_secret'),
    ])
    .where('id', '=', id)
    .executeTakeFirst()) as { url: string; secret: string; previous_secret: string | null } | undefined;
  if (!row) throw errors.notFound();
  return { url: row.url, secrets: row.previous_secret ? [row.secret, row.previous_secret] : [row.secret] };
}
