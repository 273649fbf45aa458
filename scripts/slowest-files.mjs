// A node:test reporter that prints, once the run ends, the ten slowest test files and the ten that used the most
// CPU (BALCAO_TEST_SHOWN=N: N of them) and, for each file that failed, the end of what its process wrote to stderr
// and the runner's diagnostics for it, beside the usual reporter (scripts/test.ts passes both): where a slow suite
// spends its time, and why a file failed when all of its tests passed (an error after its last test, a crash),
// even where only the end of a CI log is kept.
// Plain JavaScript because the runner loads reporters before any --import hook (tsx) is registered.
import fs from 'node:fs';
import path from 'node:path';

const SHOWN = Number(process.env.BALCAO_TEST_SHOWN) || 10;
/** Lines of a failed file's stderr and diagnostics kept, the last ones. */
const KEPT_LINES = 60;
const TOTALS = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$/;

/** A test file by its source's name: `npm test` runs bundles of them (scripts/test-bundles.ts). */
const sourceName = (file) =>
  path
    .relative(process.cwd(), file)
    .replace(/^\.test-build\/run-[^/]+\//, '')
    .replace(/\.test\.js$/, '.test.ts');

/**
 * CPU seconds of this process's reaped children, their own descendants included (cutime + cstime of
 * /proc/self/stat); null where there is no /proc. The runner reaps a file's process before it reports the file
 * complete, so the growth since the previous file's completion is that file's CPU: its process, the servers and
 * commands it started. Two files ending within the same moment may swap a share; the total is exact.
 */
function reapedCpuSeconds() {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return null;
  }
}

/** @param {AsyncIterable<{ type: string, data?: { name?: string, file?: string, message?: string, details?: { duration_ms?: number } } }>} source */
export default async function* slowestFiles(source) {
  /** @type {Map<string, number>} */
  const files = new Map();
  /** @type {Map<string, number>} CPU seconds of each file's process tree */
  const cpu = new Map();
  let reaped = reapedCpuSeconds();
  /** @type {Map<string, string[]>} */
  const output = new Map();
  /** @type {Set<string>} */
  const failed = new Set();
  /** @type {string[]} */
  const loose = [];
  const started = Date.now();
  for await (const event of source) {
    const { name, file, details, message } = event.data ?? {};
    // The runner completes each file as a test named by the file's path; its duration is that process's wall time.
    if (event.type === 'test:complete' && name && name === file && details?.duration_ms !== undefined) {
      files.set(file, details.duration_ms);
      const now = reapedCpuSeconds();
      if (now !== null && reaped !== null) cpu.set(file, now - reaped);
      reaped = now;
    }
    // A file's own failure is not an event of its own on every Node version: any failed test in it names it.
    if (event.type === 'test:fail' && file) failed.add(file);
    // The runner's diagnostics name no file (an error after a file's last test is one): all but the totals are kept.
    if (event.type === 'test:diagnostic' && !file && typeof message === 'string' && !TOTALS.test(message)) loose.push(message);
    if ((event.type === 'test:stderr' || event.type === 'test:diagnostic') && file && typeof message === 'string') {
      const lines = output.get(file) ?? [];
      lines.push(...message.trimEnd().split('\n'));
      if (lines.length > KEPT_LINES * 2) lines.splice(0, lines.length - KEPT_LINES);
      output.set(file, lines);
    }
  }
  for (const file of failed) {
    const lines = (output.get(file) ?? []).slice(-KEPT_LINES);
    yield `\n${sourceName(file)} failed; the end of its stderr and diagnostics (${lines.length} lines):\n${lines.map((l) => `  | ${l}`).join('\n')}\n`;
  }
  if (failed.size > 0 && loose.length > 0)
    yield `\nthe runner's diagnostics:\n${loose
      .slice(-KEPT_LINES)
      .map((l) => `  | ${l}`)
      .join('\n')}\n`;
  if (files.size === 0) return;
  const slowest = [...files].sort((a, b) => b[1] - a[1]).slice(0, SHOWN);
  const names = slowest.map(([file]) => sourceName(file));
  const width = Math.max(...[...files.keys()].map((file) => sourceName(file).length));
  const cpuOf = (file) => (cpu.has(file) ? `  ${cpu.get(file).toFixed(1).padStart(6)} s of CPU` : '');
  const lines = slowest.map(([file, ms], i) => `  ${names[i].padEnd(width)}  ${(ms / 1000).toFixed(1).padStart(6)} s${cpuOf(file)}`);
  const total = ((Date.now() - started) / 1000).toFixed(1);
  const cpuTotal = cpu.size > 0 ? `, ${[...cpu.values()].reduce((a, b) => a + b, 0).toFixed(0)} s of CPU` : '';
  yield `\nslowest ${slowest.length} of ${files.size} test files (wall time of each; the tests took ${total} s${cpuTotal}):\n${lines.join('\n')}\n`;
  if (cpu.size > 0) {
    const hungriest = [...cpu].sort((a, b) => b[1] - a[1]).slice(0, SHOWN);
    const rows = hungriest.map(([file, seconds]) => `  ${sourceName(file).padEnd(width)}  ${seconds.toFixed(1).padStart(6)} s`);
    yield `\nthe ${hungriest.length} test files that used the most CPU (each file's process and what it started):\n${rows.join('\n')}\n`;
  }
}
