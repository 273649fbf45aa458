// A node:test reporter that prints the ten slowest test files once the run ends, beside the usual
// reporter (scripts/test.ts passes both): where a slow suite spends its time, at a glance. Plain
// JavaScript because the runner loads reporters before any --import hook (tsx) is registered.
import path from 'node:path';

const SHOWN = 10;

/** @param {AsyncIterable<{ type: string, data?: { name?: string, file?: string, details?: { duration_ms?: number } } }>} source */
export default async function* slowestFiles(source) {
  /** @type {Map<string, number>} */
  const files = new Map();
  const started = Date.now();
  for await (const event of source) {
    const { name, file, details } = event.data ?? {};
    // The runner completes each file as a test named by the file's path; its duration is that process's wall time.
    if (event.type === 'test:complete' && name && name === file && details?.duration_ms !== undefined) {
      files.set(file, details.duration_ms);
    }
  }
  if (files.size === 0) return;
  const slowest = [...files].sort((a, b) => b[1] - a[1]).slice(0, SHOWN);
  const names = slowest.map(([file]) => path.relative(process.cwd(), file));
  const width = Math.max(...names.map((n) => n.length));
  const lines = slowest.map(([, ms], i) => `  ${names[i].padEnd(width)}  ${(ms / 1000).toFixed(1).padStart(6)} s`);
  const total = ((Date.now() - started) / 1000).toFixed(1);
  yield `\nslowest ${slowest.length} of ${files.size} test files (wall time of each; the tests took ${total} s):\n${lines.join('\n')}\n`;
}
