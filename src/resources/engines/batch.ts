// POST /v1/batch (issue 28): up to 100 writes in one call, each answered as the single request would be.
// Each operation goes through the app itself (app.inject), so it meets exactly the checks of the single
// request (scopes, modules, plan, validation, the tenant wall) and has its effects (events, the write log);
// the batch's key is authenticated and charged once, and handed to the operations by an in-process context
// (src/http/batch-context.ts). An atomic batch runs every operation in one transaction, each in its own
// savepoint so every failure is reported, and commits only when all succeeded (docs/api-guide.md "Batches").
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import type { AuthContext } from '../../domain/tenant.ts';
import { errors, type FieldError } from '../../errors/app-error.ts';
import { ERROR_CATALOGUE } from '../../errors/catalogue.ts';
import { BATCH_OPERATION_HEADER, type BatchOperationContext, enterOperation, leaveOperation } from '../../http/batch-context.ts';
import { MetaSchema } from '../../http/envelope.ts';
import { createIdempotencyHooks, IDEMPOTENCY_HEADER, JSON_CONTENT_TYPE } from '../../http/idempotency.ts';
import type { RateLimiter } from '../../http/rate-limit.ts';
import type { Db } from '../../infra/db/engine/database.ts';
import { IdempotencyStore, type IdempotencyStoreOptions } from '../../infra/idempotency-store.ts';
import { sql } from 'kysely';
import { writeTransaction } from '../../infra/db/statements/write-transaction.ts';
import { commitPositionOf } from '../../http/read-your-writes.ts';
import inject from 'light-my-request';
import type { ResourceDescriptor } from '../descriptor.ts';
import { EXTERNAL_ID_RESOURCES } from './external-id.ts';

export const MAX_OPERATIONS = 100;
const METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'] as const;
type Method = (typeof METHODS)[number];

export interface Operation {
  method: Method;
  path: string;
  body?: unknown;
  if_match?: string;
}

const MAX_IF_MATCH = 1024;

const OperationSchema = Type.Object(
  {
    method: Type.Union(
      METHODS.map((m) => Type.Literal(m)),
      { description: 'POST creates, PUT upserts by external id, PATCH updates, DELETE deactivates.' },
    ),
    path: Type.String({
      maxLength: 255,
      pattern: '^/v1/',
      description:
        'A write route: `/v1/<resource>` for POST, `/v1/<resource>/by-external-id/<external_id>` for PUT, `/v1/<resource>/<id>` for PATCH and DELETE.',
      examples: ['/v1/customers'],
    }),
    body: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'The body of the single request; absent for DELETE.' })),
    if_match: Type.Optional(
      Type.String({
        maxLength: MAX_IF_MATCH,
        pattern: '^[\\x20-\\x7e]*$',
        description: 'The `If-Match` of the single request (PUT, PATCH, DELETE).',
      }),
    ),
  },
  { title: 'BatchOperation' },
);

export const BatchBodySchema = Type.Object(
  {
    operations: Type.Array(OperationSchema, { minItems: 1, maxItems: MAX_OPERATIONS }),
    atomic: Type.Optional(Type.Boolean({ default: false, description: 'All the operations commit together, or none does.' })),
  },
  // Checked by the route itself: the operations' bodies must reach their own validation untouched.
  {
    title: 'BatchRequest',
    'x-balcao-unvalidated': true,
    examples: [
      {
        atomic: true,
        operations: [
          {
            method: 'POST',
            path: '/v1/customers',
            body: { full_name: 'Maria da Silva', email: 'maria.silva@example.com', phone: '+55 11 98765-4321', document: '529.982.247-25' },
          },
          { method: 'POST', path: '/v1/suppliers', body: { name: 'Distribuidora Silva', document_number: '11.222.333/0001-81' } },
        ],
      },
    ],
  },
);

const BatchResultSchema = Type.Object(
  {
    status: Type.Integer({
      format: 'int32',
      description: 'The HTTP status the single request would have answered (424 `batch_aborted` in a failed atomic batch).',
      examples: [201],
    }),
    body: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
      description: 'Exactly the body of the single request: an item envelope, a problem, or null (204).',
      examples: [{ data: { id: '3f2b8c1e-9d4a-4e7b-8a61-5c0d2e9f7b13', full_name: 'Maria Silva' }, meta: { request_id: 'erp-sync-0042' } }],
    }),
    etag: Type.Union([Type.String({ examples: ['"k3v9TqL0d2Xc8Jm1Rw5Yb7Nf4Hs6Pa2"'] }), Type.Null()], {
      description: 'The `ETag` of the single request, or null.',
    }),
  },
  { title: 'BatchResult' },
);

const BatchResponseSchema = Type.Object({ data: Type.Array(BatchResultSchema), meta: MetaSchema }, { title: 'BatchResponse' });

const invalid = (field: string, code: string, message: string): FieldError => ({ field, code, message });

/** The batch's operations, or a 422 naming every malformed part (`operations[3].path`). */
export function parseBatch(raw: unknown, writable: ReadonlySet<string>): { operations: Operation[]; atomic: boolean } {
  const refused: FieldError[] = [];
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw errors.bodyInvalid([invalid('body', 'invalid_type', 'Tipo inválido: esperado objeto.')]);
  const body = raw as Record<string, unknown>;
  const atomic = body.atomic ?? false;
  if (typeof atomic !== 'boolean') refused.push(invalid('atomic', 'invalid_type', 'Tipo inválido: esperado booleano.'));
  const ops = body.operations;
  if (!Array.isArray(ops)) {
    refused.push(
      ops === undefined
        ? invalid('operations', 'required', 'Campo obrigatório.')
        : invalid('operations', 'invalid_type', 'Tipo inválido: esperado lista.'),
    );
    throw errors.bodyInvalid(refused);
  }
  if (ops.length < 1) refused.push(invalid('operations', 'too_short', 'Deve ter pelo menos 1 item(ns).'));
  if (ops.length > MAX_OPERATIONS) refused.push(invalid('operations', 'too_long', `Deve ter no máximo ${MAX_OPERATIONS} itens.`));
  const operations: Operation[] = [];
  ops.forEach((op: unknown, i) => {
    const at = `operations[${i}]`;
    if (op === null || typeof op !== 'object' || Array.isArray(op)) {
      refused.push(invalid(at, 'invalid_type', 'Tipo inválido: esperado objeto.'));
      return;
    }
    const { method, path, body: opBody, if_match: ifMatch } = op as Record<string, unknown>;
    if (method === undefined) refused.push(invalid(`${at}.method`, 'required', 'Campo obrigatório.'));
    else if (!METHODS.includes(method as Method))
      refused.push(invalid(`${at}.method`, 'invalid_enum', `Valor não permitido; valores aceitos: ${METHODS.join(', ')}.`));
    if (path === undefined) refused.push(invalid(`${at}.path`, 'required', 'Campo obrigatório.'));
    else if (typeof path !== 'string') refused.push(invalid(`${at}.path`, 'invalid_type', 'Tipo inválido: esperado texto.'));
    else if (METHODS.includes(method as Method) && !isWriteRoute(method as Method, path, writable))
      refused.push(
        invalid(
          `${at}.path`,
          'invalid_path',
          `Não é uma rota de escrita para ${String(method)}: use /v1/<recurso> (POST), /v1/<recurso>/by-external-id/<id externo> (PUT) ou /v1/<recurso>/<id> (PATCH, DELETE).`,
        ),
      );
    if (ifMatch !== undefined && typeof ifMatch !== 'string')
      refused.push(invalid(`${at}.if_match`, 'invalid_type', 'Tipo inválido: esperado texto.'));
    else if (typeof ifMatch === 'string' && ifMatch.length > MAX_IF_MATCH)
      refused.push(invalid(`${at}.if_match`, 'too_long', `Texto longo demais: no máximo ${MAX_IF_MATCH} caracteres.`));
    // It becomes a header of the single request, where only visible ASCII (and spaces) can travel.
    else if (typeof ifMatch === 'string' && !/^[\x20-\x7e]*$/.test(ifMatch))
      refused.push(invalid(`${at}.if_match`, 'invalid_format', 'Formato inválido: um ETag, uma lista deles ou *.'));
    operations.push({ method: method as Method, path: path as string, body: opBody, if_match: ifMatch as string | undefined });
  });
  if (refused.length > 0) throw errors.bodyInvalid(refused);
  return { operations, atomic: atomic as boolean };
}

const ROUTE = /^\/v1\/([a-z-]+)(?:\/([^/?#]+))?$/;
const UPSERT_ROUTE = /^\/v1\/([a-z-]+)\/by-external-id\/[^/?#]+$/;
function isWriteRoute(method: Method, path: string, writable: ReadonlySet<string>): boolean {
  if (method === 'PUT') {
    const resource = UPSERT_ROUTE.exec(path)?.[1];
    return resource !== undefined && writable.has(resource) && EXTERNAL_ID_RESOURCES.has(resource);
  }
  const match = ROUTE.exec(path);
  if (!match || !writable.has(match[1] as string)) return false;
  return method === 'POST' ? match[2] === undefined : match[2] !== undefined;
}

interface Result {
  status: number;
  /** The body as the single request sent it (JSON text), or null. */
  body: string | null;
  etag: string | null;
}

export interface BatchDeps {
  config: Config;
  database: { db: Db };
  rateLimiter: RateLimiter;
  resources: readonly ResourceDescriptor[];
  idempotency?: IdempotencyStoreOptions;
}

/** Thrown inside an atomic batch's transaction to roll it back once an operation failed. */
class Aborted extends Error {}

/** Runs one operation of a batch as the single request, through the app. */
type RunOperation = (request: FastifyRequest, op: Operation, context: OperationContext) => Promise<Result>;
type OperationContext = BatchOperationContext;

/** One operation, as the single request, through the app. */
function operationRunner(app: FastifyInstance): RunOperation {
  return async (request, op, context) => {
    const token = enterOperation(context);
    try {
      const headers: Record<string, string> = { [BATCH_OPERATION_HEADER]: token, 'x-request-id': request.id };
      if (op.if_match !== undefined) headers['if-match'] = op.if_match;
      const hasBody = op.method !== 'DELETE';
      if (hasBody) headers['content-type'] = 'application/json';
      // Not app.inject, which refuses once the app is closing: a batch in flight during a graceful stop finishes.
      const res = await inject(app.routing, {
        method: op.method,
        url: op.path,
        headers,
        remoteAddress: request.ip,
        ...(hasBody && op.body !== undefined ? { payload: JSON.stringify(op.body) } : {}),
      });
      const etag = res.headers.etag;
      return { status: res.statusCode, body: res.payload === '' ? null : res.payload, etag: typeof etag === 'string' ? etag : null };
    } finally {
      leaveOperation(token);
    }
  };
}

/** The result of an operation that succeeded in an atomic batch that did not commit. */
function aborted(deps: BatchDeps, request: FastifyRequest, op: Operation): Result {
  const error = errors.batchAborted();
  const body = {
    type: `${deps.config.errorsUrl}/${error.code}`,
    title: ERROR_CATALOGUE[error.code].title,
    status: error.status,
    detail: error.detail,
    instance: op.path,
    request_id: request.id,
  };
  return { status: error.status, body: JSON.stringify(body), etag: null };
}

/** Every operation in one transaction, each under a savepoint: all commit, or none and the others answer 424. */
async function runAtomic(
  deps: BatchDeps,
  run: RunOperation,
  request: FastifyRequest,
  operations: readonly Operation[],
  context: OperationContext,
  beforeCommit: ((trx: Db) => Promise<void>) | undefined,
): Promise<Result[]> {
  const ran: Result[] = [];
  // What the operations leave for after the commit (their events' NOTIFY): run only once it committed.
  const afterCommit: (() => void)[] = [];
  try {
    await writeTransaction(deps.database.db, { commitPosition: commitPositionOf(request) }, async (tx) => {
      const trx = tx.db;
      for (const [i, op] of operations.entries()) {
        const savepoint = sql.raw(`batch_op_${i}`);
        await sql`savepoint ${savepoint}`.execute(trx);
        const result = await run(request, op, { ...context, tx, afterCommit: (work) => afterCommit.push(work) });
        ran.push(result);
        // A failed operation leaves nothing behind, and the transaction usable for the next ones.
        if (result.status >= 400) await sql`rollback to savepoint ${savepoint}`.execute(trx);
        else await sql`release savepoint ${savepoint}`.execute(trx);
      }
      if (ran.some((r) => r.status >= 400)) throw new Aborted();
      await beforeCommit?.(trx);
    });
    for (const work of afterCommit) work();
    return ran;
  } catch (err) {
    if (!(err instanceof Aborted)) throw err;
    return ran.map((r, i) => (r.status >= 400 ? r : aborted(deps, request, operations[i] as Operation)));
  }
}

const BATCH_DOC =
  'Each operation (`POST /v1/<resource>`, `PUT /v1/<resource>/by-external-id/<external_id>`, `PATCH` or `DELETE /v1/<resource>/<id>`) is checked and answered exactly as the single ' +
  'request would be: scopes, modules, plan, validation, the tenant wall, `If-Match` (from `if_match`), events. The answer is 200 ' +
  'with one result per operation, in order: `{status, body, etag}`. With `atomic: false` each operation stands alone; with ' +
  '`atomic: true` all commit together or none does: the failed ones carry their error and the others 424 `batch_aborted`. ' +
  'Each operation counts as one write in the minute and day layers, the batch once in the burst layer; a batch that would ' +
  'exceed a layer is refused whole with 429 before anything runs. An `Idempotency-Key` makes the whole batch idempotent (same ' +
  'key and body replays, another body is a 409). A malformed batch (more than 100 operations, an unknown method, a path that ' +
  'is not a write route) is a 422 for the whole request, with `errors[].field` such as `operations[3].path`.';

export function registerBatchRoute(app: FastifyInstance, deps: BatchDeps): void {
  const writable = new Set(deps.resources.filter((d) => d.write).map((d) => d.name as string));
  const hooks = createIdempotencyHooks(new IdempotencyStore(deps.database.db, deps.idempotency));
  const run = operationRunner(app);

  app.post(
    '/v1/batch',
    {
      attachValidation: true,
      config: { operationId: 'batch.create' },
      preValidation: hooks.claim,
      onSend: hooks.record,
      schema: {
        operationId: 'batch.create',
        summary: 'Send up to 100 writes in one request',
        description: BATCH_DOC,
        tags: ['Batch'],
        body: BatchBodySchema,
        response: { 200: BatchResponseSchema },
      },
    },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const auth = request.auth as AuthContext;
      const { operations, atomic } = parseBatch(request.body, writable);
      // The batch itself was counted once in every layer: its other operations count in the minute and day layers.
      const more = operations.length - 1;
      if (more > 0) await deps.rateLimiter.chargeMore(auth, 'write', [0, more, more], reply);
      const header = request.headers[IDEMPOTENCY_HEADER];
      const context = { auth, idempotencyKey: typeof header === 'string' ? header : null };
      let results: Result[] = [];
      if (atomic) results = await runAtomic(deps, run, request, operations, context, hooks.beforeCommit(request));
      else for (const op of operations) results.push(await run(request, op, context));
      const data = results.map(
        (r) => `{"status":${r.status},"body":${r.body ?? 'null'},"etag":${r.etag === null ? 'null' : JSON.stringify(r.etag)}}`,
      );
      const text = `{"data":[${data.join(',')}],"meta":{"request_id":${JSON.stringify(request.id)}}}`;
      return reply.code(200).type(JSON_CONTENT_TYPE).send(text);
    },
  );
}
