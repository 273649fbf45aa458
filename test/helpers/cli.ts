// Runs the real `balcao` command in a child process against a scratch database: a temp
// BALCAO_DATA_DIR, or a fresh PostgreSQL database when TEST_DATABASE_URL is set (both unmigrated).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { openDatabase } from '../../src/infra/db/engine/database.ts';
import { prepareDatabase } from '../../src/events/capture/setup.ts';
import { distributeCitusDatabase, dropCitusDatabase, onCitus, prepareCitusDatabase } from './citus.ts';
import { copyEmbeddedDataDir, databaseUrl } from './db-templates.ts';
import { dropTestDatabase } from './drop-database.ts';

// Servers a test started and did not stop (it failed before it could): killed once the file's tests end, so a
// failure is reported instead of the file waiting for ever on a child that keeps its event loop alive.
const liveServers = new Set<ChildProcess>();
after(() => {
  for (const child of liveServers) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** Kill `child` at the end of the file's tests if it is still running then. */
export function killAtEnd(child: ChildProcess): void {
  liveServers.add(child);
  child.once('exit', () => liveServers.delete(child));
}

export const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/balcao.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ScratchEnv {
  env: Record<string, string>;
  cleanup(): Promise<void>;
}

export interface ScratchOptions {
  /** An empty data folder, where `balcao` creates the embedded database itself (by default the folder holds a
   *  copy of what that first use makes, which saves each test process most of a second; both are unmigrated). */
  fresh?: boolean;
}

export async function scratchEnv(options: ScratchOptions = {}): Promise<ScratchEnv> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-cli-'));
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    if (!options.fresh) await copyEmbeddedDataDir(dir);
    return { env: { BALCAO_DATA_DIR: dir }, cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `balcao_cli_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  if (onCitus()) {
    // On Citus the database is migrated and distributed before the command runs (the operator's order).
    await prepareCitusDatabase(adminUrl, name);
    const database = await openDatabase({ databaseUrl: databaseUrl(adminUrl, name), dataDir: '' });
    await prepareDatabase(database);
    await database.close();
    await distributeCitusDatabase(adminUrl, name);
  }
  return {
    env: { DATABASE_URL: databaseUrl(adminUrl, name), BALCAO_DATA_DIR: dir },
    cleanup: async () => {
      await dropTestDatabase(adminUrl, name);
      if (onCitus()) await dropCitusDatabase(name);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const childEnv = (env: Record<string, string>) => {
  const { TEST_DATABASE_URL: _t, DATABASE_URL: _d, REDIS_URL: _r, ...rest } = process.env;
  // No stop grace unless a test asks: a stop here has no balancer to wait for.
  return { ...rest, LOG_LEVEL: 'warn', BALCAO_SHUTDOWN_GRACE_MS: '0', ...env };
};

/**
 * V8 flags of the servers the tests run. Each one compiles PGlite's WebAssembly afresh, and V8's optimizing tier
 * then recompiles its hot functions in the background for a process that ends seconds later: `--liftoff-only` took
 * `balcao migrate` on a new embedded folder from 5.6–6.0 to 4.0–4.4 s of CPU, and `accounts list` from 1.05 to
 * 0.57 s, and graceful-stop.test.ts from 63 to 40–45 s. The flags only choose compilers (no behaviour changes);
 * `balcao` as installed keeps V8's defaults.
 */
export const SERVER_NODE_FLAGS = ['--liftoff-only'];

/** V8 flags of the short-lived commands: no optimizing tier for JavaScript either, which a command is over before
 *  it pays for (cli.test.ts 42.8 → 35.7 s of CPU); a server under a test's load still gains from it. */
export const COMMAND_NODE_FLAGS = [...SERVER_NODE_FLAGS, '--no-opt'];

/** A bound against a command that hangs, not a speed check: `balcao migrate` on a new embedded folder (4 s of CPU)
 *  took past 60 s with two suites at once on two cores. A command ended by it says so on stderr. */
const COMMAND_TIMEOUT_MS = 240_000;

export function balcao(args: string[], env: Record<string, string>, nodeArgs: string[] = []): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...COMMAND_NODE_FLAGS, ...nodeArgs, BIN, ...args],
      { env: childEnv(env), timeout: COMMAND_TIMEOUT_MS },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        const ended = error?.killed ? `\n(ended after ${COMMAND_TIMEOUT_MS} ms: ${error.signal})` : '';
        resolve({ code, stdout, stderr: stderr + ended });
      },
    );
  });
}

/** A module hook that names on stderr every file the command loads (`loaded <url>` lines). */
const LOAD_HOOK =
  "export async function load(url, context, next) { process.stderr.write('loaded ' + url + '\\n'); return next(url, context); }";
const TRACE_LOADS = [
  '--import',
  `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(LOAD_HOOK)}`)});`)}`,
];

/** Runs the command and lists the files it loaded (paths relative to the repository), in load order. */
export async function balcaoLoads(args: string[], env: Record<string, string>): Promise<CliResult & { loaded: string[] }> {
  const result = await balcao(args, env, TRACE_LOADS);
  const root = path.resolve(path.dirname(BIN), '..');
  const loaded = [...result.stderr.matchAll(/^loaded file:\/\/(.*)$/gm)].map((m) => path.relative(root, m[1]!));
  return { ...result, loaded };
}

export async function balcaoJson<T = any>(args: string[], env: Record<string, string>): Promise<T> {
  const r = await balcao([...args, '--json'], env);
  if (r.code !== 0) throw new Error(`balcao ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

export interface RunningServer {
  child: ChildProcess;
  url: string;
  stdout: string;
  stop(): Promise<void>;
}

/** Starts `balcao <command> --json [args]` (serve or demo) on a free port and waits for its JSON line. */
export function startServe(
  command: 'serve' | 'demo',
  env: Record<string, string>,
  args: string[] = [],
): Promise<RunningServer & { announced: any }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, BIN, command, '--json', ...args], {
      env: childEnv({ PORT: '0', HOST: '127.0.0.1', ...env }),
    });
    killAtEnd(child);
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`balcao ${command} did not start: ${stderr}`));
    }, 60_000);
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.stdout.on('data', (d) => {
      stdout += d;
      const line = stdout.split('\n').find((l) => l.trim().startsWith('{'));
      if (line && stdout.includes('\n')) {
        clearTimeout(timer);
        const announced = JSON.parse(line);
        resolve({
          child,
          url: announced.url,
          stdout,
          announced,
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`balcao ${command} exited with ${code}: ${stderr}`));
    });
  });
}
