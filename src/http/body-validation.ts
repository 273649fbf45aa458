// Validation of write bodies (DECISIONS B.7, B.8): one Ajv instance compiles the write schemas
// (every error, no coercion, unknown fields dropped) and its errors become `errors[]` items
// `{field: 'items[3].quantity', code, message}` with stable codes and pt-BR messages.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';
import type { FieldError } from '../errors/app-error.ts';
import { NO_NUL_PATTERN } from '../schemas/bounds.ts';
import { FORMATS, NUMBER_FORMATS } from '../schemas/formats.ts';

type ValidationError = Pick<FastifySchemaValidationError, 'keyword' | 'instancePath' | 'params'> & {
  schemaPath?: string;
  message?: string;
};

function createBodyAjv(): Ajv {
  const ajv = new Ajv({
    allErrors: true, // bodies and arrays are bounded (1 MiB, 200 items), so this is safe
    coerceTypes: false,
    removeAdditional: 'all', // unknown and read-only fields are ignored, never refused
    useDefaults: false, // defaults are applied by the rules, so PATCH never gains a field
    strict: false, // schemas carry annotations (x-balcao-type, examples)
    validateFormats: true,
  });
  for (const [name, check] of Object.entries(FORMATS)) ajv.addFormat(name, check);
  for (const [name, validate] of Object.entries(NUMBER_FORMATS)) ajv.addFormat(name, { type: 'number', validate });
  return ajv;
}

/** Created with the first body validated: Ajv adds its meta-schemas when constructed. */
let bodyAjv: Ajv | undefined;

/** A body that is absent or JSON `null` is reported as one `body` / `required` error. */
const MISSING_BODY: FastifySchemaValidationError = {
  keyword: 'required',
  instancePath: '',
  schemaPath: '#/required',
  params: {},
  message: 'body is required',
};

const acceptAll = () => true;

/**
 * The app's one validator compiler: bodies through the Ajv above; querystrings, params and
 * headers are documentation only, because their own parsers decide (the query language refuses
 * with its B.9 tokens, a malformed id is a 404 from the engine, an unknown error code a 404 page).
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  // A route that checks its own body (POST /v1/batch: its operations' bodies must reach their own validation untouched).
  if (httpPart !== 'body' || (schema as Record<string, unknown>)['x-balcao-unvalidated'] === true) return acceptAll;
  // Compiled on the route's first body, not at start-up: compiling every write schema is a large
  // part of the time to listen, and a route never written to never pays for it.
  let validate: ValidateFunction | undefined;
  const run = (data: unknown) => {
    if (data === null || data === undefined) {
      run.errors = [MISSING_BODY];
      return false;
    }
    bodyAjv ??= createBodyAjv();
    validate ??= bodyAjv.compile(schema as object);
    const ok = validate(data);
    run.errors = ok ? null : (validate.errors ?? []);
    return ok;
  };
  run.errors = null as FastifySchemaValidationError[] | ErrorObject[] | null;
  return run;
};

/** JSON pointer `/items/3/quantity` → `items[3].quantity`. */
export function fieldPath(instancePath: string, child?: string): string {
  const parts = instancePath.split('/').slice(1);
  if (child !== undefined && child !== '') parts.push(child);
  let out = '';
  for (const raw of parts) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(part)) out += `[${part}]`;
    else out += out ? `.${part}` : part;
  }
  return out || 'body';
}

const TYPE_NAMES: Record<string, string> = {
  string: 'texto',
  number: 'número',
  integer: 'número inteiro',
  boolean: 'booleano',
  object: 'objeto',
  array: 'lista',
  null: 'nulo',
};

// Which error speaks for a field when Ajv reports several (a nullable field reports its
// non-null branch, the null branch and the anyOf): the most specific one.
const BRANCH_RANK = 9;
const PRIORITY: Record<string, number> = { required: 0, type: 1, anyOf: BRANCH_RANK, oneOf: BRANCH_RANK };

function describe(e: ValidationError): FieldError {
  const field = fieldPath(e.instancePath, e.keyword === 'required' ? String(e.params.missingProperty ?? '') : undefined);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return { field, code: 'required', message: field === 'body' ? 'O corpo da requisição é obrigatório.' : 'Campo obrigatório.' };
    case 'type': {
      const expected = String(p.type)
        .split(',')
        .filter((t) => t !== 'null')
        .map((t) => TYPE_NAMES[t] ?? t)
        .join(' ou ');
      return { field, code: 'invalid_type', message: `Tipo inválido: esperado ${expected || 'outro tipo'}.` };
    }
    case 'format':
      switch (p.format) {
        case 'uuid':
          return { field, code: 'invalid_uuid', message: 'Deve ser um UUID válido.' };
        case 'email':
          return { field, code: 'invalid_email', message: 'Deve ser um endereço de e-mail válido.' };
        case 'date':
          return { field, code: 'invalid_date', message: 'Deve ser uma data válida no formato AAAA-MM-DD.' };
        case 'date-time':
          return { field, code: 'invalid_format', message: 'Deve ser uma data e hora ISO 8601 válida (ex.: 2026-11-21T10:00:00Z).' };
        default:
          return { field, code: 'invalid_format', message: 'Formato inválido.' };
      }
    case 'pattern':
      if (p.pattern === NO_NUL_PATTERN) return { field, code: 'invalid_format', message: 'O texto contém caracteres não permitidos.' };
      return { field, code: 'invalid_format', message: 'Formato inválido.' };
    case 'minLength':
      return { field, code: 'too_short', message: `Deve ter pelo menos ${p.limit} caractere(s).` };
    case 'maxLength':
      return { field, code: 'too_long', message: `Deve ter no máximo ${p.limit} caracteres.` };
    case 'minItems':
      return { field, code: 'too_short', message: `Deve ter pelo menos ${p.limit} item(ns).` };
    case 'maxItems':
      return { field, code: 'too_long', message: `Deve ter no máximo ${p.limit} itens.` };
    case 'minimum':
      return { field, code: 'too_small', message: `Deve ser maior ou igual a ${p.limit}.` };
    case 'exclusiveMinimum':
      return { field, code: 'too_small', message: `Deve ser maior que ${p.limit}.` };
    case 'maximum':
      return { field, code: 'too_big', message: `Deve ser menor ou igual a ${p.limit}.` };
    case 'exclusiveMaximum':
      return { field, code: 'too_big', message: `Deve ser menor que ${p.limit}.` };
    case 'enum':
    case 'const': {
      const allowed = (p.allowedValues as unknown[] | undefined) ?? [p.allowedValue];
      return { field, code: 'invalid_enum', message: `Valor não permitido; valores aceitos: ${allowed.join(', ')}.` };
    }
    case 'anyOf':
    case 'oneOf':
      return { field, code: 'invalid_type', message: 'Tipo inválido.' };
    default:
      return { field, code: 'invalid', message: 'Valor inválido.' };
  }
}

/**
 * Ajv errors → one FieldError per refused field, in the order of the body. Also used by the
 * app's error handler for any Fastify body validation failure.
 */
export function toFieldErrors(validation: readonly ValidationError[]): FieldError[] {
  const byField = new Map<string, { rank: number; error: FieldError }>();
  for (const e of validation) {
    // The `null` branch of a nullable field failing says nothing when the value is not null.
    if (e.keyword === 'type' && (e.params as { type?: unknown }).type === 'null') continue;
    const error = describe(e);
    const rank = PRIORITY[e.keyword] ?? 2;
    const seen = byField.get(error.field);
    if (!seen || rank < seen.rank) byField.set(error.field, { rank, error });
  }
  // A nullable array or object that failed inside reports its anyOf too: the inner field
  // speaks for it, so the container is not refused a second time (one item per field).
  for (const [field, { rank }] of byField) {
    if (rank < BRANCH_RANK) continue;
    for (const other of byField.keys()) {
      if (other.startsWith(`${field}[`) || other.startsWith(`${field}.`)) {
        byField.delete(field);
        break;
      }
    }
  }
  // A nullable field whose only complaint was the null branch (cannot happen with our
  // schemas, but never answer a refused body with an empty list).
  if (byField.size === 0 && validation.length > 0) {
    const first = validation[0] as ValidationError;
    return [describe({ ...first, keyword: first.keyword === 'type' ? 'anyOf' : first.keyword })];
  }
  return [...byField.values()].map((v) => v.error);
}

/** PostgreSQL text cannot hold U+0000; refuse it as a field error instead of failing the insert.
 *  Walks with its own stack, and spells a path only for a hit: a body nested 100 000 levels deep
 *  (it fits in 1 MiB) must not overflow the call stack or build a path per level. */
export function nulCharacterErrors(body: unknown): FieldError[] {
  type Node = { value: unknown; key: string; parent: Node | undefined };
  const out: FieldError[] = [];
  const stack: Node[] = [{ value: body, key: '', parent: undefined }];
  while (stack.length > 0) {
    const node = stack.pop() as Node;
    const { value } = node;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) {
        const keys: string[] = [];
        for (let n: Node | undefined = node; n?.parent; n = n.parent) keys.push(n.key);
        const pointer = keys
          .reverse()
          .map((k) => `/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`)
          .join('');
        out.push({ field: fieldPath(pointer), code: 'invalid_format', message: 'O texto contém caracteres não permitidos.' });
      }
    } else if (value && typeof value === 'object') {
      const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
      // Pushed in reverse, so fields are reported in body order.
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] as readonly [string, unknown];
        stack.push({ value: child, key, parent: node });
      }
    }
  }
  return out;
}

/** Field errors merged so each field appears once (the first reason wins). */
export function mergeFieldErrors(...lists: readonly FieldError[][]): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const list of lists) {
    for (const e of list) {
      if (seen.has(e.field)) continue;
      seen.add(e.field);
      out.push(e);
    }
  }
  return out;
}

type ValidatorFactory = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']
>;

/**
 * The validator builder for Fastify's `schemaController` option: every route gets `validatorCompiler`.
 * (Fastify's type names Ajv's compile signature; Fastify itself calls the result as a schema compiler.)
 */
export const bodyValidators = (() => validatorCompiler) as unknown as ValidatorFactory;
