// What the project's two esbuild builds share (scripts/build.ts: the release's dist/; scripts/test-bundles.ts: the
// test files): ES modules for the oldest Node the project supports (package.json engines), with the code that
// several entries share split into chunks of their own.
import type { BuildOptions } from 'esbuild';

export const nodeEsmBundle = {
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
} as const satisfies BuildOptions;
