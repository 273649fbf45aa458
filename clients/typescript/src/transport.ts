// Requests over fetch, safe by default: every POST and PUT carries an Idempotency-Key (the caller's or a new UUID), a 429
// waits its Retry-After and goes again, and a 503 or a network failure is retried with exponential backoff only
// when repeating is safe: a GET, or a write that carries an Idempotency-Key (the server then answers the first
// outcome again instead of writing twice). Errors come back as BalcaoError.
import { BalcaoError, problemOf } from './errors.js';

export interface ClientOptions {
  /** The API's address, e.g. `https://api.example.com` (no `/v1`). */
  baseUrl: string;
  apiKey: string;
  /** Node 20+ or a browser's fetch by default. */
  fetch?: typeof fetch;
  /** Retries after a 429, a 503 or a network failure, per request. Default 5. */
  maxRetries?: number;
  /** First backoff of a 503 or a network failure; doubles each time. Default 500 ms. */
  retryDelayMs?: number;
}

export type QueryValue = string | number | boolean | readonly (string | number)[] | undefined | null;
/** `{status: {eq: 'completed'}, total_amount: {gte: 100}}` → `filter[status][eq]=completed&filter[total_amount][gte]=100`. */
export type Filter = Record<string, Partial<Record<string, QueryValue>>>;

export interface RequestOptions {
  query?: Record<string, QueryValue | Filter>;
  body?: unknown;
  headers?: Record<string, string>;
  /** POST and PUT only; a new UUID when absent. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface Answer<T> {
  data: T;
  response: Response;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

const listValue = (v: QueryValue): string | undefined =>
  v === undefined || v === null ? undefined : Array.isArray(v) ? v.join(',') : String(v);

export function queryString(query: RequestOptions['query'] = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (name === 'filter' && value && typeof value === 'object' && !Array.isArray(value)) {
      for (const [field, ops] of Object.entries(value as Filter))
        for (const [op, v] of Object.entries(ops ?? {})) {
          const text = listValue(v as QueryValue);
          if (text !== undefined) params.append(`filter[${field}][${op}]`, text);
        }
      continue;
    }
    const text = listValue(value as QueryValue);
    if (text !== undefined) params.append(name, text);
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

export class Transport {
  private readonly send: typeof fetch;
  private readonly baseUrl: string;
  private readonly maxRetries: number;
  private readonly retryDelayMs: number;

  constructor(private readonly options: ClientOptions) {
    this.send = options.fetch ?? ((...args) => globalThis.fetch(...args));
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.maxRetries = options.maxRetries ?? 5;
    this.retryDelayMs = options.retryDelayMs ?? 500;
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<Answer<T>> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.apiKey}`,
      accept: 'application/json',
      ...options.headers,
    };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (method === 'POST' || method === 'PUT') headers['idempotency-key'] = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    // Safe to send again when the server cannot have written twice: a read, or a write it recognizes by its key.
    const repeatable = method === 'GET' || headers['idempotency-key'] !== undefined;
    const url = `${this.baseUrl}${path}${queryString(options.query)}`;
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.send(url, { method, headers, body, signal: options.signal });
      } catch (err) {
        if (options.signal?.aborted || !repeatable || attempt >= this.maxRetries) throw err;
        await sleep(this.backoff(attempt), options.signal);
        continue;
      }
      if (response.status === 429 && attempt < this.maxRetries) {
        await response.body?.cancel();
        await sleep(Number(response.headers.get('retry-after') ?? '1') * 1000, options.signal);
        continue;
      }
      if (response.status === 503 && repeatable && attempt < this.maxRetries) {
        await response.body?.cancel();
        const after = Number(response.headers.get('retry-after'));
        await sleep(after > 0 ? after * 1000 : this.backoff(attempt), options.signal);
        continue;
      }
      const text = await response.text();
      const parsed: unknown = text ? JSON.parse(text) : null;
      if (!response.ok) throw new BalcaoError(problemOf(response.status, parsed, response.headers.get('x-request-id')), response.status);
      return { data: parsed as T, response };
    }
  }

  /** Exponential, with full jitter so clients that failed together do not come back together. */
  private backoff(attempt: number): number {
    return Math.round(this.retryDelayMs * 2 ** attempt * (0.5 + Math.random() / 2));
  }
}
