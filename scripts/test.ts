// `npm test`: the static checks (lint, typecheck, the OpenAPI check) side by side while the database templates
// the tests start from are made (test/helpers/db-templates.ts), then the test files, several at once, the slowest
// first, with the ten slowest named at the end (scripts/slowest-files.mjs). Any failure fails the command.
// The files run as JavaScript bundled by esbuild (scripts/test-bundles.ts), not through tsx's loader.
// `npm test -- test/a.test.ts test/b.test.ts` runs only those files (the checks still run first).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeTemplates } from '../test/helpers/db-templates.ts';
import { bundleTests } from './test-bundles.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Files that run longest (measured on a 2-core machine), started first so none is left running alone at the
 *  end. The order only matters for time; a file missing here starts after these, in name order. */
const SLOW_FIRST = [
  'graceful-stop',
  'cli',
  'fuzz-routes',
  'release',
  'export-roundtrip',
  'webhooks-crash',
  'webhooks',
  'pgbouncer',
  'import-cli',
  'input-bounds',
  'crash-safety',
  'database-faults',
  'import-kill',
  'demo-data',
  'secrets',
  'serve-workers',
  'restart',
  'data-subject',
].map((name) => `test/${name}.test.ts`);

/**
 * V8 flags of every test file's process. Each process compiles PGlite's WebAssembly afresh and opens its
 * databases for seconds at most: V8's optimizing tiers recompile the hot functions in the background, CPU that
 * its short life never earns back. `--liftoff-only` (WebAssembly): a file of write tests 8.75 → 7.09 s of CPU.
 * Not `--no-opt` (JavaScript): it saved small files a sixth of their CPU (etags 5.6–6.3 → 4.6–5.1 s), but with
 * it and two suites at once on two cores, topology.test.ts (which drives the traffic and receives the webhooks in
 * its own process) failed in both: deliveries still arriving, some twice, after its 45 s wait. Alone it passes
 * with or without the flag; until that is understood the files run without it. The `balcao` commands and servers
 * the tests start take their own (COMMAND_NODE_FLAGS, SERVER_NODE_FLAGS in test/helpers/cli.ts).
 * Source maps put a failure's stack on the TypeScript lines; Node reads a map only when a stack needs it.
 */
const TEST_PROCESS_FLAGS = ['--liftoff-only', '--enable-source-maps'];

/** Test files at once. Most of a test file's time is spent waiting (on its child processes, on a server's
 *  timers, on the network), so more files than cores keep the cores busy; BALCAO_TEST_CONCURRENCY overrides. */
const concurrency = Number(process.env.BALCAO_TEST_CONCURRENCY) || Math.max(2, os.availableParallelism() * 2);

/** The longest a test file may run (the slowest takes under two minutes on a loaded 2-core machine). Past it the
 *  runner ends the file's process and fails it by name: a hang is a failure that says where, not a run that
 *  never ends. BALCAO_TEST_FILE_TIMEOUT_MS overrides. */
const fileTimeoutMs = Number(process.env.BALCAO_TEST_FILE_TIMEOUT_MS) || 600_000;

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit', env });
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

let code = 0;
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const templates = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-test-templates-'));
// Ctrl-C reaches the children too: wait for them to end, then remove the templates.
let interrupted = false;
process.on('SIGINT', () => {
  interrupted = true;
});
try {
  const started = Date.now();
  const [checks] = await Promise.all([
    Promise.all(['lint', 'typecheck', 'openapi:check'].map((script) => run(npm, ['run', script]))),
    makeTemplates(templates, process.env.TEST_DATABASE_URL),
  ]);
  code = checks.find((c) => c !== 0) ?? 0;
  console.log(`checks and templates: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  if (code === 0 && !interrupted) {
    const chosen = process.argv.slice(2);
    const all = fs
      .readdirSync(path.join(root, 'test'))
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => `test/${f}`)
      .sort();
    const files =
      chosen.length > 0 ? chosen : [...SLOW_FIRST.filter((f) => all.includes(f)), ...all.filter((f) => !SLOW_FIRST.includes(f))];
    // Inside the checkout, so the bundles' imports of packages resolve from its node_modules.
    fs.mkdirSync(path.join(root, '.test-build'), { recursive: true });
    const bundles = fs.mkdtempSync(path.join(root, '.test-build', 'run-'));
    try {
      const bundled = await bundleTests(root, files, bundles);
      code = await run(
        process.execPath,
        [
          ...TEST_PROCESS_FLAGS,
          '--test',
          `--test-concurrency=${concurrency}`,
          `--test-timeout=${fileTimeoutMs}`,
          '--test-reporter=spec',
          '--test-reporter-destination=stdout',
          '--test-reporter=./scripts/slowest-files.mjs',
          '--test-reporter-destination=stdout',
          ...bundled,
        ],
        { ...process.env, BALCAO_TEST_TEMPLATES: templates },
      );
    } finally {
      fs.rmSync(bundles, { recursive: true, force: true });
    }
  }
} finally {
  fs.rmSync(templates, { recursive: true, force: true });
}
process.exitCode = interrupted ? 130 : code;
