// A restart right after a stop, on one embedded database (issue 50 A): `npx balcao …` returns as soon as its shell
// has gone, before the process it started has finished its graceful stop, and a command started then used to refuse
// with "in use by process N". The stopping holder now marks its lock file, and a newcomer waits for it to exit.
// (test/cli.test.ts checks that a holder that is not stopping is still refused at once.)
// Both tests use an embedded data folder on either pass of the suite: the lock is the embedded database's.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { BIN, killAtEnd, type ScratchEnv, scratchEnv } from './helpers/cli.ts';
import { until } from './helpers/poll.ts';

const ROOT = path.resolve(path.dirname(BIN), '..');
const scratches: ScratchEnv[] = [];
after(async () => {
  for (const s of scratches) await s.cleanup();
});

/** An embedded data folder (a copy of a migrated one), even on the PostgreSQL pass. */
async function embeddedFolder(): Promise<string> {
  const { TEST_DATABASE_URL, ...rest } = process.env;
  process.env = rest;
  try {
    const scratch = await scratchEnv();
    scratches.push(scratch);
    return scratch.env.BALCAO_DATA_DIR!;
  } finally {
    process.env.TEST_DATABASE_URL = TEST_DATABASE_URL;
    if (TEST_DATABASE_URL === undefined) delete process.env.TEST_DATABASE_URL;
  }
}

/** The environment a user's shell would give: the defaults of the stop (no grace override), the embedded database. */
function userEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { TEST_DATABASE_URL: _t, DATABASE_URL: _d, REDIS_URL: _r, BALCAO_SHUTDOWN_GRACE_MS: _g, ...rest } = process.env;
  return { ...rest, BALCAO_DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', npm_config_yes: 'true', ...extra };
}

interface Started {
  child: ChildProcess;
  announced: any;
  stderr: () => string;
  exited: Promise<number | string>;
}

/** Spawns `command` in a process group of its own (as a terminal's job) and resolves with its `--json` line. */
function start(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<Started> {
  const child = spawn(command, args, { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  killAtEnd(child);
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      stdout += d;
      const line = stdout.split('\n').find((l) => l.trim().startsWith('{'));
      if (line && stdout.includes('\n')) resolve({ child, announced: JSON.parse(line), stderr: () => stderr, exited });
    });
    void exited.then((code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${stderr}`)));
  });
}

const lockFile = (dataDir: string) => path.join(dataDir, 'balcao.lock');
const lockHolder = (dataDir: string): { pid: number; stopping_until?: string } | undefined => {
  try {
    return JSON.parse(fs.readFileSync(lockFile(dataDir), 'utf8'));
  } catch {
    return undefined;
  }
};
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Stops a process group the way a terminal's Ctrl-C or systemd's control group does: every process in it. */
async function stopGroup(started: Started, dataDir: string): Promise<void> {
  const holder = lockHolder(dataDir)?.pid;
  process.kill(-started.child.pid!, 'SIGTERM');
  await started.exited;
  if (holder) await until(`process ${holder} has exited`, () => !isAlive(holder), { withinMs: 60_000 });
}

async function ready(url: string): Promise<number> {
  return (await fetch(`${url}/health/ready`)).status;
}

describe('a restart right after a stop, on one embedded database', () => {
  it('stop `npx balcao demo`, then at once `npx balcao serve` on the same folder: the second serves the demo data', async () => {
    const dataDir = await embeddedFolder();
    const demo = await start('npx', ['balcao', 'demo', '--json'], userEnv(dataDir));
    assert.equal(await ready(demo.announced.url), 200);

    process.kill(-demo.child.pid!, 'SIGTERM');
    await demo.exited; // npx is back: the user's prompt returns and they type the next command
    const serve = await start('npx', ['balcao', 'serve', '--json'], userEnv(dataDir));
    try {
      assert.equal(await ready(serve.announced.url), 200);
      const me = await fetch(`${serve.announced.url}/v1/me`, { headers: { authorization: `Bearer ${demo.announced.key}` } });
      assert.equal(me.status, 200, 'the demo key of the stopped process works on the new one: same database');
    } finally {
      await stopGroup(serve, dataDir);
    }
  });

  // Without the wait, the command would be refused: the holder keeps the database for its 2 s grace.
  it('with a grace period, a command started while the holder stops waits for it, then opens the database', async () => {
    const dataDir = await embeddedFolder();
    const first = await start(process.execPath, [BIN, 'serve', '--json'], userEnv(dataDir, { BALCAO_SHUTDOWN_GRACE_MS: '2000' }));
    process.kill(first.child.pid!, 'SIGTERM');
    await until('the holder marks its lock as stopping', () => lockHolder(dataDir)?.stopping_until);
    const second = await start(process.execPath, [BIN, 'migrate', '--json'], userEnv(dataDir));
    assert.equal(await second.exited, 0, second.stderr());
    assert.equal(await first.exited, 0);
  });
});
