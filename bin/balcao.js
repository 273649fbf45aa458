#!/usr/bin/env -S node --max-old-space-size=512
// Entry point of the `balcao` command: runs the compiled CLI in dist/ (`npm run build`, which
// `npm ci` runs through `prepare`). `npm run dev` runs the TypeScript sources instead.
// The old-space cap makes V8 collect before the heap grows far past what the server keeps live
// (about 30 MB): under load a served process stays near 130 MB of RSS instead of 150-220, at no
// measured cost in throughput (docs/performance.md). `node <flags> bin/balcao.js` chooses otherwise.
try {
  await import('../dist/cli/main.js');
} catch (err) {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main.js')) {
    process.stderr.write('balcao: not built yet; run `npm run build` (npm ci does it) and try again\n');
    process.exit(1);
  }
  throw err;
}
