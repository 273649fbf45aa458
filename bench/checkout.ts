// A build of another git ref in a temporary folder, over this checkout's node_modules: the "before" side of a
// benchmark that compares two builds (the traces baseline of bench/http-bench.ts, BENCH_BEFORE of bench/first-page.ts).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export async function buildCheckout(ref: string): Promise<{ dir: string; remove(): void }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-bench-baseline-'));
  const archive = execFileSync('git', ['archive', '--format=tar', ref], { cwd: root, maxBuffer: 1 << 30 });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: dir, stdio: 'inherit' });
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}
