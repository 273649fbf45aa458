#!/usr/bin/env node
// Entry point of the `balcao` command: runs the compiled CLI in dist/ (`npm run build`, which
// `npm ci` runs through `prepare`). `npm run dev` runs the TypeScript sources instead.
try {
  await import('../dist/cli/main.js');
} catch (err) {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main.js')) {
    process.stderr.write('balcao: not built yet; run `npm run build` (npm ci does it) and try again\n');
    process.exit(1);
  }
  throw err;
}
