// A node:test reporter that prints, once the run ends, the ten slowest test files (BALCAO_TEST_SHOWN=N: N of them) and, for each file that
// failed, the end of what its process wrote to stderr and the runner's diagnostics for it, beside the usual
// reporter (scripts/test.ts passes both): where a slow suite spends its time, and why a file failed when all
// of its tests passed (an error after its last test, a crash), even where only the end of a CI log is kept.
// Plain JavaScript because the runner loads reporters before any --import hook (tsx) is registered.
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

/** @param {AsyncIterable<{ type: string, data?: { name?: string, file?: string, message?: string, details?: { duration_ms?: number } } }>} source */
export default async function* slowestFiles(source) {
  /** @type {Map<string, number>} */
  const files = new Map();
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
  const width = Math.max(...names.map((n) => n.length));
  const lines = slowest.map(([, ms], i) => `  ${names[i].padEnd(width)}  ${(ms / 1000).toFixed(1).padStart(6)} s`);
  const total = ((Date.now() - started) / 1000).toFixed(1);
  yield `\nslowest ${slowest.length} of ${files.size} test files (wall time of each; the tests took ${total} s):\n${lines.join('\n')}\n`;
}
