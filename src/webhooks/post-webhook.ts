// One delivery attempt over HTTP: POST the signed body, wait at most the timeout for a status,
// keep at most 1 kB of the answer. The connected address is checked (lookup and socket) unless
// private addresses are allowed; a fresh connection per attempt, so no socket skips the check.
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { AddressRefusedError, isPublicAddress, publicOnlyLookup } from './address-safety.ts';

export const MAX_STORED_BODY = 1024;

export interface AttemptOutcome {
  ok: boolean;
  status: number | null;
  /** Short, stable description of a failure without a status (timeout, refused address, connection). */
  error: string | null;
  body: string | null;
  durationMs: number;
  /** Stopped by a graceful shutdown: not an attempt, the delivery is released. */
  aborted: boolean;
}

export interface PostOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  signal: AbortSignal;
}

function describe(err: unknown, timedOut: boolean): string {
  if (timedOut) return 'timeout';
  if (err instanceof AddressRefusedError) return 'address_not_allowed';
  const code = (err as { code?: string }).code;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_error';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection_reset';
  if ((typeof code === 'string' && code.startsWith('ERR_TLS')) || code?.includes('CERT')) return 'tls_error';
  return 'connection_error';
}

type Client = typeof http | typeof https;

/** The target's URL and its client: https always, http only where private addresses are allowed. */
function clientFor(target: string, allowPrivate: boolean): { url: URL; client: Client } | null {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return null;
  }
  const client = url.protocol === 'https:' ? https : url.protocol === 'http:' && allowPrivate ? http : null;
  return client ? { url, client } : null;
}

/** The POST, not yet sent, its connected address checked unless private addresses are allowed. */
function openRequest(url: URL, client: Client, headers: Record<string, string>, body: string, allowPrivate: boolean): ClientRequest {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const request = client.request(url, {
    method: 'POST',
    agent: false,
    lookup: publicOnlyLookup(allowPrivate),
    headers: {
      ...headers,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'user-agent': 'Balcao-Webhooks/1.0',
    },
  });
  // IP literals skip `lookup`: the connected address is checked for every connection.
  request.on('socket', (socket: Socket) => {
    socket.once('connect', () => {
      if (!allowPrivate && !isPublicAddress(socket.remoteAddress ?? '')) request.destroy(new AddressRefusedError(host));
    });
  });
  return request;
}

/** Calls `done` with the first MAX_STORED_BODY bytes of the answer once they, or its end, arrive. */
function readCapped(response: IncomingMessage, done: (text: string) => void): void {
  const chunks: Buffer[] = [];
  let kept = 0;
  const finish = () => {
    done(Buffer.concat(chunks).toString('utf8').slice(0, MAX_STORED_BODY));
    response.destroy();
  };
  response.on('data', (chunk: Buffer) => {
    if (kept < MAX_STORED_BODY) {
      chunks.push(chunk.subarray(0, MAX_STORED_BODY - kept));
      kept += Math.min(chunk.length, MAX_STORED_BODY - kept);
    }
    if (kept >= MAX_STORED_BODY) finish();
  });
  response.on('end', finish);
  response.on('error', finish);
  response.on('close', finish);
}

export function postWebhook(target: string, headers: Record<string, string>, body: string, options: PostOptions): Promise<AttemptOutcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    let timedOut = false;
    let status: number | null = null;
    let timer: NodeJS.Timeout | undefined;
    const finish = (outcome: Omit<AttemptOutcome, 'durationMs' | 'aborted'> & { aborted?: boolean }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      resolve({ aborted: false, ...outcome, durationMs: Math.round(performance.now() - started) });
    };
    const opened = clientFor(target, options.allowPrivate);
    if (!opened) {
      finish({ ok: false, status: null, error: 'invalid_url', body: null });
      return;
    }
    const request = openRequest(opened.url, opened.client, headers, body, options.allowPrivate);
    timer = setTimeout(() => {
      timedOut = true;
      request.destroy(new Error('timeout'));
    }, options.timeoutMs);
    function onAbort() {
      request.destroy(new Error('aborted'));
      finish({ ok: false, status: null, error: null, body: null, aborted: true });
    }
    options.signal.addEventListener('abort', onAbort, { once: true });
    request.on('response', (response) => {
      status = response.statusCode ?? null;
      readCapped(response, (text) =>
        finish({ ok: status !== null && status >= 200 && status < 300, status, error: null, body: text || null }),
      );
    });
    request.on('error', (err) => {
      // A status already received is the outcome even if the body broke off.
      if (status !== null) return;
      finish({ ok: false, status: null, error: describe(err, timedOut), body: null });
    });
    request.end(body);
  });
}
