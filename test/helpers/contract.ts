// Holds every response the integration tests receive to the OpenAPI document the server serves:
// the status must be documented for the path and method, the required headers present and
// valid, and the body must match the schema of its media type (Ajv, JSON Schema 2020-12).
// Paths the document does not list (test-only routes, assets) are not checked.
import { AssertionError } from 'node:assert';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

type Json = Record<string, any>;

export interface ContractResponse {
  status: number;
  headers: Headers;
  text: string;
}

const DOCUMENT_ID = 'openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

// ajv-formats is CommonJS: its default export arrives as the module object or the function.
const addFormats = ((addFormatsModule as any).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

interface PathTemplate {
  template: string;
  regex: RegExp;
  literals: number;
}

export class Contract {
  private static readonly cache = new Map<string, Contract>();

  /** One compiled contract per document text, shared by every server of the test process. */
  static for(documentJson: string): Contract {
    let contract = Contract.cache.get(documentJson);
    if (!contract) {
      contract = new Contract(JSON.parse(documentJson));
      Contract.cache.set(documentJson, contract);
    }
    return contract;
  }

  private readonly ajv: Ajv2020;
  private readonly templates: PathTemplate[];
  private readonly validators = new Map<string, ValidateFunction>();

  private constructor(private readonly doc: Json) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats(this.ajv);
    this.ajv.addSchema(doc, DOCUMENT_ID);
    this.templates = Object.keys(doc.paths ?? {}).map((template) => {
      const parts = template.split('/');
      const source = parts.map((p) => (/^\{[^}]+\}$/.test(p) ? '[^/]+' : p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
      return { template, regex: new RegExp(`^${source}$`), literals: parts.filter((p) => !p.startsWith('{')).length };
    });
  }

  /** The documented path template a concrete path falls under (static segments win, as in the router). */
  templateOf(pathname: string): string | undefined {
    let best: PathTemplate | undefined;
    for (const t of this.templates) if (t.regex.test(pathname) && (!best || t.literals > best.literals)) best = t;
    return best?.template;
  }

  /** Throws an AssertionError describing every way the response breaks the document. */
  check(method: string, url: string, res: ContractResponse): void {
    const pathname = new URL(url, 'http://x').pathname;
    const template = this.templateOf(pathname);
    if (!template) return;
    const m = method.toLowerCase();
    const opMethod = m === 'head' && !this.doc.paths[template].head ? 'get' : m;
    const where = `${method.toUpperCase()} ${pathname} → ${res.status}`;
    const operation = METHODS.includes(opMethod) ? this.doc.paths[template][opMethod] : undefined;

    let pointer: string;
    if (!operation) {
      // Another method on a documented path: the shared 405.
      if (res.status !== 405) this.fail(where, [`${method.toUpperCase()} is not documented on ${template}, so it must answer 405`]);
      pointer = '/components/responses/MethodNotAllowed';
    } else {
      const responses: Json = operation.responses ?? {};
      const key = String(res.status) in responses ? String(res.status) : 'default' in responses ? 'default' : undefined;
      if (!key)
        this.fail(where, [
          `status ${res.status} is not documented for ${opMethod.toUpperCase()} ${template} (documented: ${Object.keys(responses).join(', ')})`,
        ]);
      pointer = `/paths/${escapePointer(template)}/${opMethod}/responses/${key}`;
    }
    const resolved = this.deref(pointer);
    const response = resolved.value;
    pointer = resolved.pointer;

    const problems = [...this.headerProblems(response, pointer, res.headers)];
    if (m !== 'head') problems.push(...this.bodyProblems(response, pointer, res));
    if (problems.length > 0) this.fail(where, problems, res.text);
  }

  private *headerProblems(response: Json, responsePointer: string, headers: Headers): Generator<string> {
    for (const name of Object.keys(response.headers ?? {})) {
      const { value: header, pointer } = this.deref(`${responsePointer}/headers/${escapePointer(name)}`);
      const value = headers.get(name);
      if (value === null) {
        if (header.required) yield `required header ${name} is missing`;
        continue;
      }
      const validate = this.validator(`${pointer}/schema`);
      const typed = header.schema?.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
      if (!validate(typed)) yield `header ${name}: ${JSON.stringify(value)} ${this.ajv.errorsText(validate.errors)}`;
    }
  }

  private *bodyProblems(response: Json, pointer: string, res: ContractResponse): Generator<string> {
    const content: Json | undefined = response.content;
    if (!content) {
      if (res.text !== '') yield `no body is documented, got ${res.text.length} bytes`;
      return;
    }
    const mediaType = (res.headers.get('content-type') ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
    const media = content[mediaType];
    if (!media) {
      yield `content type ${JSON.stringify(mediaType)} is not documented (documented: ${Object.keys(content).join(', ')})`;
      return;
    }
    if (!mediaType.includes('json')) {
      if (media.schema?.type === 'string' && res.text.length === 0) yield 'empty body where a document is expected';
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(res.text);
    } catch {
      yield `body is not JSON: ${res.text.slice(0, 200)}`;
      return;
    }
    const validate = this.validator(`${pointer}/content/${escapePointer(mediaType)}/schema`);
    if (!validate(body))
      for (const e of validate.errors ?? []) yield `body${e.instancePath} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`;
  }

  /** The object at a JSON pointer, following `$ref`s (responses and headers are shared components). */
  private deref(pointer: string): { value: Json; pointer: string } {
    let at = pointer;
    for (let hops = 0; hops < 5; hops++) {
      const value = at
        .split('/')
        .slice(1)
        .reduce<any>((node, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], this.doc);
      if (value === undefined) throw new Error(`contract: nothing at #${at}`);
      if (typeof value.$ref !== 'string') return { value, pointer: at };
      at = value.$ref.replace(/^#/, '');
    }
    throw new Error(`contract: too many $ref hops from #${pointer}`);
  }

  private validator(pointer: string): ValidateFunction {
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
      this.validators.set(pointer, validate);
    }
    return validate;
  }

  private fail(where: string, problems: string[], text?: string): never {
    const body = text ? `\nbody: ${text.length > 800 ? `${text.slice(0, 800)}…` : text}` : '';
    throw new AssertionError({ message: `response breaks the OpenAPI document: ${where}\n- ${problems.join('\n- ')}${body}` });
  }
}
