// Load from wrk (a C load generator) instead of autocannon, when it is installed. On a 2-core
// machine the load generator shares the cores with both servers and PostgreSQL: autocannon spends
// about as much CPU per request as the baseline itself, wrk a fraction of it, so the servers'
// ratio under wrk is closer to what they cost. wrk is also what outside checks run.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface WrkLoad {
  url: string;
  connections: number;
  seconds: number;
  threads: number;
  method: 'GET' | 'POST' | 'PATCH';
  headers: Record<string, string>;
  body?: string;
  /** A fresh Idempotency-Key per request. */
  idempotent?: boolean;
  /** Each request's path has `{id}` replaced by the next of these (a write spread over many records),
   *  and its body `{n}` by a value no other request of the run sends (so every write changes something). */
  ids?: readonly string[];
}

export interface WrkResult {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Socket errors, timeouts and answers that are not 2xx/3xx. */
  errors: number;
}

export function wrkInstalled(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (error) {
    // `wrk --version` prints its usage and exits 1; only a missing binary is ENOENT.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

const lua = (text: string) => JSON.stringify(text); // a JSON string is a valid Lua string literal here

/** The Lua script: the request, and a summary printed as one JSON line when the run is done. */
function script(load: WrkLoad): string {
  const lines = [`wrk.method = ${lua(load.method)}`];
  for (const [name, value] of Object.entries(load.headers)) lines.push(`wrk.headers[${lua(name)}] = ${lua(value)}`);
  if (load.body !== undefined) lines.push(`wrk.body = ${lua(load.body)}`);
  if (load.idempotent || load.ids) {
    // Each thread has its own Lua state: the thread number keeps the keys and values apart.
    lines.push(
      'local threads = 0',
      'setup = function(thread) threads = threads + 1; thread:set("tid", threads) end',
      `local prefix = ${lua(`bench-${process.pid}-${Date.now()}-`)}`,
      `local ids = {${(load.ids ?? []).map(lua).join(',')}}`,
      `local pathTemplate = ${lua(load.url.replace(/^https?:\/\/[^/]+/, ''))}`,
      `local bodyTemplate = ${load.body === undefined ? 'nil' : lua(load.body)}`,
      'local n = 0',
      'request = function()',
      '  n = n + 1',
      '  local unique = prefix .. tostring(tid) .. "-" .. n',
      `  ${load.idempotent ? 'wrk.headers["idempotency-key"] = unique' : ''}`,
      '  local path = pathTemplate',
      '  if #ids > 0 then path = path:gsub("{id}", ids[(n + tid * 7919) % #ids + 1]) end',
      '  local body = bodyTemplate and bodyTemplate:gsub("{n}", unique) or nil',
      '  return wrk.format(nil, path, nil, body)',
      'end',
    );
  }
  lines.push(
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format(\'\\n{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"errors":%d}\\n\',',
    '    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),',
    '    e.connect + e.read + e.write + e.status + e.timeout))',
    'end',
  );
  return `${lines.join('\n')}\n`;
}

export async function wrk(load: WrkLoad): Promise<WrkResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-wrk-'));
  try {
    const file = path.join(dir, 'load.lua');
    fs.writeFileSync(file, script(load));
    const url = load.ids?.length ? load.url.replace('{id}', load.ids[0]!) : load.url;
    const args = ['-t', String(load.threads), '-c', String(load.connections), '-d', `${load.seconds}s`, '-s', file, url];
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile('wrk', args, { timeout: (load.seconds + 30) * 1000 }, (error, out, err) =>
        error ? reject(new Error(`wrk failed: ${err || error.message}`)) : resolve(out),
      ),
    );
    const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'));
    if (!line) throw new Error(`wrk printed no summary:\n${stdout}`);
    const s = JSON.parse(line) as { requests: number; duration_us: number; p50_us: number; p99_us: number; errors: number };
    return {
      requests: s.requests,
      rps: s.requests / (s.duration_us / 1e6),
      p50Ms: s.p50_us / 1000,
      p99Ms: s.p99_us / 1000,
      errors: s.errors,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
