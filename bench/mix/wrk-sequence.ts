// wrk replaying a fixed list of requests in order (each connection takes the next one), from a generated Lua
// script: a C load generator spends little of the 2 cores the servers and PostgreSQL share, and its latency
// histogram gives honest p50/p99 of the whole mix. `{n}` in a body, and an Idempotency-Key when asked, take a
// value no other request of the run sends.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { HttpRequest } from './mix-traffic.ts';

export interface SequenceLoad {
  base: string;
  requests: readonly HttpRequest[];
  connections: number;
  seconds: number;
  threads: number;
}

export interface SequenceResult {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** The mean and the largest latency: with p50 and p99, whether a few very slow requests hold the connections. */
  meanMs: number;
  maxMs: number;
  /** Socket errors, timeouts and answers that are not 2xx/3xx. */
  errors: number;
}

const lua = (text: string) => JSON.stringify(text); // a JSON string is a valid Lua string literal here

function script(load: SequenceLoad): string {
  const rows = load.requests.map((r) => {
    const headers = { ...r.headers, ...(r.body !== undefined ? { 'content-type': 'application/json' } : {}) };
    const h = Object.entries(headers)
      .map(([k, v]) => `[${lua(k)}]=${lua(v)}`)
      .join(',');
    return `{${lua(r.method)},${lua(r.path)},{${h}},${r.body === undefined ? 'nil' : lua(r.body)},${r.idempotent ? 'true' : 'false'}}`;
  });
  return `${[
    `local reqs = {\n${rows.join(',\n')}\n}`,
    'local threads = 0',
    'setup = function(thread) threads = threads + 1; thread:set("tid", threads) end',
    `local prefix = ${lua(`mix-${process.pid}-${Date.now()}-`)}`,
    'local n = 0',
    'request = function()',
    '  n = n + 1',
    '  local r = reqs[(n - 1 + (tid - 1) * 7919) % #reqs + 1]',
    '  local body = r[4]',
    '  local headers = r[3]',
    '  if body or r[5] then',
    '    local unique = prefix .. tostring(tid) .. "-" .. n',
    '    if body then body = body:gsub("{n}", unique) end',
    '    if r[5] then',
    '      headers = {}',
    '      for k, v in pairs(r[3]) do headers[k] = v end',
    '      headers["idempotency-key"] = unique',
    '    end',
    '  end',
    '  return wrk.format(r[1], r[2], headers, body)',
    'end',
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format(\'\\n{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"mean_us":%d,"max_us":%d,"errors":%d}\\n\',',
    '    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.mean, latency.max,',
    '    e.connect + e.read + e.write + e.status + e.timeout))',
    'end',
  ].join('\n')}\n`;
}

export async function wrkSequence(load: SequenceLoad): Promise<SequenceResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-wrk-mix-'));
  try {
    const file = path.join(dir, 'mix.lua');
    fs.writeFileSync(file, script(load));
    const args = [
      '-t',
      String(load.threads),
      '-c',
      String(load.connections),
      '-d',
      `${load.seconds}s`,
      // A request unanswered when the round ends is neither counted nor in the histogram: with a timeout of half
      // the round, one that hangs is counted as an error instead of only leaving its connection idle.
      '--timeout',
      `${Math.max(2, Math.floor(load.seconds / 2))}s`,
      '-s',
      file,
      load.base,
    ];
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile('wrk', args, { timeout: (load.seconds + 60) * 1000, maxBuffer: 1 << 20 }, (error, out, err) =>
        error ? reject(new Error(`wrk failed: ${err || error.message}`)) : resolve(out),
      ),
    );
    const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'));
    if (!line) throw new Error(`wrk printed no summary:\n${stdout}`);
    const s = JSON.parse(line) as {
      requests: number;
      duration_us: number;
      p50_us: number;
      p99_us: number;
      mean_us: number;
      max_us: number;
      errors: number;
    };
    return {
      requests: s.requests,
      rps: s.requests / (s.duration_us / 1e6),
      p50Ms: s.p50_us / 1000,
      p99Ms: s.p99_us / 1000,
      meanMs: s.mean_us / 1000,
      maxMs: s.max_us / 1000,
      errors: s.errors,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
