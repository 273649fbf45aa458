// Completes what @fastify/swagger derives from the route schemas with what every route shares:
// security (public routes and /v1/me included), the problem responses each route can give, the
// request-id / rate-limit / idempotency headers, examples, tags and named components.
import type { Config } from '../config.ts';
import { ERROR_CATALOGUE } from '../errors/catalogue.ts';
import { SECURITY_SCHEME, securityScheme } from './document-info.ts';
import { exampleOf } from './examples.ts';
import { byCodeUnits } from '../schemas/plain-text.ts';
import { DEPRECATION_HEADERS, headerUse, RATE_LIMIT_HEADERS, REQUEST_PARAMETERS, RESPONSE_HEADERS } from './headers.ts';
import { deprecationText } from '../http/deprecation.ts';
import { SchemaNamer } from './named-schemas.ts';
import { simplifyNullable } from '../schemas/nullable.ts';
import { canonicalJson } from '../schemas/canonical-json.ts';
import { EXAMPLE_ERRORS_URL, ProblemResponses, problemCodesFor } from './problem-responses.ts';
import { FieldErrorSchema, ProblemSchema } from './problem-schema.ts';
import type { RouteFacts } from './route-facts.ts';
import { webhookPayloads } from './webhook-payloads.ts';
import { rendererCompatible } from './renderer-compat.ts';

type Json = Record<string, any>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Our own annotations (`x-balcao-type` drives the query parser) are not part of the public contract. */
function stripPrivateKeys(node: unknown): void {
  if (Array.isArray(node)) for (const item of node) stripPrivateKeys(item);
  else if (node && typeof node === 'object') {
    for (const key of Object.keys(node)) {
      if (key.startsWith('x-balcao')) delete (node as Json)[key];
      else stripPrivateKeys((node as Json)[key]);
    }
  }
}

const SUCCESS_DESCRIPTIONS: Record<string, string> = { '200': 'OK.', '201': 'Created.', '204': 'No content.' };

const toJson = (schema: unknown): Json => JSON.parse(JSON.stringify(schema));

/** Replaces every top-level schema of the document (components, parameters, bodies, responses) with `fn(schema)`. */
function forEachSchemaRoot(doc: Json, fn: (schema: Json) => Json): void {
  const media = (holder: Json | undefined) => {
    for (const m of Object.values<Json>(holder?.content ?? {})) if (m.schema) m.schema = fn(m.schema);
  };
  for (const [name, schema] of Object.entries<Json>(doc.components.schemas)) doc.components.schemas[name] = fn(schema);
  for (const body of Object.values<Json>(doc.components.requestBodies ?? {})) media(body);
  for (const pathItem of Object.values<Json>(doc.paths ?? {})) {
    for (const op of METHODS.map((m) => pathItem[m]).filter(Boolean)) {
      for (const p of op.parameters ?? []) if (p.schema) p.schema = fn(p.schema);
      media(op.requestBody);
      for (const response of Object.values<Json>(op.responses)) media(response);
    }
  }
}

function guardText(f: RouteFacts): string {
  if (f.public) return 'Public: no authentication, not rate-limited per key.';
  if (!f.resource) return 'Any valid key of an account with the API enabled; no scope or module needed.';
  const scope = `\`${f.resource}:${f.access}\``;
  return `Requires the scope ${scope}${f.module ? ` and the module \`${f.module}\` on the contract` : ''}.`;
}

function tagDescription(ops: RouteFacts[]): string {
  const modules = [...new Set(ops.map((o) => o.module).filter(Boolean))];
  const scopes = [...new Set(ops.filter((o) => o.resource).map((o) => `\`${o.resource}:${o.access}\``))];
  if (ops.every((o) => o.public)) return 'Public: no key needed.';
  if (scopes.length === 0) return 'Needs a valid key; no scope or module.';
  return `Module ${modules.map((m) => `\`${m}\``).join(', ')}; scopes ${scopes.join(', ')}.`;
}

/**
 * Write bodies are named request bodies (`components.requestBodies.CreateSaleInput`): named types
 * for clients, and a place where generators read `default` as "may be omitted", not "always there".
 */
class RequestBodies {
  private readonly byName = new Map<string, { body: Json; key: string }>();

  ref(body: Json): Json {
    const title = body.content?.['application/json']?.schema?.title;
    if (typeof title !== 'string') return body;
    const key = canonicalJson(body);
    let name = title.replace(/[^A-Za-z0-9._-]/g, '');
    const base = name;
    for (let n = 2; this.byName.has(name) && this.byName.get(name)?.key !== key; n++) name = `${base}${n}`;
    this.byName.set(name, { body, key });
    return { $ref: `#/components/requestBodies/${name}` };
  }

  components(): Json {
    return Object.fromEntries([...this.byName].map(([name, { body }]) => [name, body]));
  }
}

/** What finishing one operation shares with the others: schema names, request bodies, problem responses. */
interface Finishing {
  namer: SchemaNamer;
  resolve: (ref: string) => Json | undefined;
  requestBodies: RequestBodies;
  problems: ProblemResponses;
}

export function finishDocument(doc: Json, facts: ReadonlyMap<string, RouteFacts>, config: Config): Json {
  doc.webhooks = webhookPayloads();
  stripPrivateKeys(doc);
  // Schemas swagger already named (those with an `$id`, such as `Me`) keep their names.
  const swaggerSchemas: Json = doc.components?.schemas ?? {};
  const namer = new SchemaNamer(swaggerSchemas);
  for (const schema of Object.values<Json>(swaggerSchemas)) namer.hoist(schema, true);
  const resolve = (ref: string): Json | undefined => namer.get(ref.replace('#/components/schemas/', ''));
  const finishing: Finishing = { namer, resolve, requestBodies: new RequestBodies(), problems: new ProblemResponses(EXAMPLE_ERRORS_URL) };
  const tags = new Map<string, RouteFacts[]>();

  // Records with versions (issue 28): their item reads answer 304, their PATCH/DELETE take If-Match, their POST tags.
  const versioned = new Set(
    Object.entries<Json>(doc.paths ?? {})
      .filter(([, item]) => item.get?.responses?.['304'] !== undefined)
      .map(([path]) => path.replace(/\/\{id\}$/, '')),
  );
  for (const [path, pathItem] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op: Json | undefined = pathItem[method];
      if (!op) continue;
      const tagged =
        versioned.has(path.replace(/\/(\{id\}|by-external-id\/\{external_id\})$/, '')) && method !== 'get'
          ? true
          : op.responses?.['304'] !== undefined;
      const f = facts.get(op.operationId);
      if (!f) throw new Error(`OpenAPI: no route facts for operation ${op.operationId}`);
      for (const tag of op.tags ?? []) tags.set(tag, [...(tags.get(tag) ?? []), f]);
      finishOperation(op, f, tagged, finishing);
    }
  }
  finishing.problems.methodNotAllowed();
  for (const item of Object.values<Json>(doc.webhooks)) {
    const media = item.post.requestBody.content['application/json'];
    media.schema = namer.hoist(media.schema);
  }

  doc.security = [{ [SECURITY_SCHEME]: [] }];
  // The API's resources first, in route order; the public documentation endpoints last.
  const ordered = [...tags].sort(([, a], [, b]) => Number(a.every((o) => o.public)) - Number(b.every((o) => o.public)));
  doc.tags = ordered.map(([name, ops]) => ({ name, description: tagDescription(ops) }));
  doc.components = documentComponents(finishing, config);
  forEachSchemaRoot(doc, simplifyNullable);
  rendererCompatible(doc.components.schemas);
  describeProblem(doc.components.schemas.Problem);
  return doc;
}

/** One operation: its prose, shared parameters, request body, response headers and examples, problem responses. */
function finishOperation(op: Json, f: RouteFacts, tagged: boolean, { namer, resolve, requestBodies, problems }: Finishing): void {
  op.description = [op.description, guardText(f), f.deprecated && deprecationText(f.deprecated)].filter(Boolean).join('\n\n');
  if (f.deprecated) op.deprecated = true;
  if (f.public) op.security = [];
  op.parameters = [
    ...(op.parameters ?? []),
    { $ref: '#/components/parameters/RequestId' },
    ...(f.method === 'POST' || f.method === 'PUT' ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : []),
    ...(tagged && (f.method === 'PATCH' || f.method === 'DELETE' || f.method === 'PUT')
      ? [{ $ref: '#/components/parameters/IfMatch' }]
      : []),
    ...(tagged && f.method === 'GET' ? [{ $ref: '#/components/parameters/IfNoneMatch' }] : []),
  ];

  const body = op.requestBody?.content?.['application/json'];
  if (body?.schema) {
    // A schema's own examples (swagger moves the first to `example`) become the named `complete` one.
    if (body.examples === undefined) body.examples = requestExamples(body.schema, resolve, body.example);
    delete body.example;
    body.schema = namer.hoist(body.schema, true, true);
    op.requestBody = requestBodies.ref(op.requestBody);
  }

  for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
    if (response.$ref) continue;
    if (response.description === 'Default Response') response.description = SUCCESS_DESCRIPTIONS[status] ?? `HTTP ${status}.`;
    response.headers = { ...responseHeaders(f, status, tagged), ...response.headers };
    for (const [type, media] of Object.entries<Json>(response.content ?? {})) {
      if (!media.schema) continue;
      if (type.includes('json') && media.example === undefined && media.examples === undefined)
        media.example = exampleOf(media.schema, { resolve, mode: 'response' });
      media.schema = namer.hoist(media.schema);
    }
  }
  Object.assign(op.responses, problems.forOperation(problemCodesFor(f), f.public));
  op.responses = Object.fromEntries(Object.entries(op.responses).sort(([a], [b]) => byCodeUnits(a, b)));
}

/**
 * A request body's named examples: `complete` (every field, or the schema's own example; "try it" in a rendered
 * reference starts from it) and `usual` (the required fields and those with an example) when that differs.
 */
function requestExamples(schema: Json, resolve: (ref: string) => Json | undefined, given: unknown): Json {
  const complete = given ?? exampleOf(schema, { resolve, mode: 'complete' });
  const usual = exampleOf(schema, { resolve, mode: 'request' });
  const examples: Json = { complete: { summary: 'Every field', value: complete } };
  const isEmpty = typeof usual === 'object' && usual !== null && Object.keys(usual).length === 0;
  if (given === undefined && !isEmpty && canonicalJson(usual) !== canonicalJson(complete))
    examples.usual = { summary: 'The required fields and the usual ones', value: usual };
  return examples;
}

/** The headers a response of the operation carries, besides those its route declares. */
function responseHeaders(f: RouteFacts, status: string, tagged: boolean): Json {
  const headers: Json = { 'X-Request-Id': headerUse('X-Request-Id', 'always') };
  if (!f.public) for (const h of RATE_LIMIT_HEADERS) headers[h] = headerUse(h, 'always');
  if ((f.method === 'POST' && status === '201') || (f.method === 'PUT' && /^2/.test(status)))
    headers['Idempotent-Replay'] = { $ref: '#/components/headers/Idempotent-Replay' };
  if (f.method === 'PUT' && /^2/.test(status)) {
    // A replayed 200 carries its status and body only (docs/sync.md, "Upserts by external id").
    headers['Balcao-Upsert'] =
      status === '201' ? { $ref: '#/components/headers/Balcao-Upsert' } : headerUse('Balcao-Upsert', 'sometimes', 'Absent on a replay.');
    if (status === '201') headers.Location = { $ref: '#/components/headers/Location' };
  }
  if (f.deprecated) Object.assign(headers, DEPRECATION_HEADERS);
  if (tagged && /^(2|304)/.test(status)) headers.ETag = { $ref: '#/components/headers/ETag' };
  return headers;
}

function documentComponents({ namer, requestBodies, problems }: Finishing, config: Config): Json {
  return {
    securitySchemes: { [SECURITY_SCHEME]: securityScheme(config) },
    schemas: { ...namer.schemas(), Problem: toJson(ProblemSchema), FieldError: toJson(FieldErrorSchema) },
    parameters: REQUEST_PARAMETERS,
    headers: RESPONSE_HEADERS,
    requestBodies: requestBodies.components(),
    responses: problems.components(),
    examples: problems.examples(),
  };
}

/** The problem schema's field errors by reference, and the error types it may carry. */
function describeProblem(problem: Json): void {
  problem.properties.errors = {
    type: 'array',
    items: { $ref: '#/components/schemas/FieldError' },
    description: ProblemSchema.properties.errors.description,
  };
  problem.properties.type.examples = [`${EXAMPLE_ERRORS_URL}/${Object.keys(ERROR_CATALOGUE)[0]}`];
  problem.properties.type['x-error-codes'] = Object.keys(ERROR_CATALOGUE);
}
