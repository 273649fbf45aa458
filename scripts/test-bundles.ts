// The test files as `npm test` runs them: bundled by esbuild into JavaScript, one entry per file, the sources
// they share split into common chunks, every package left to Node's own loader from node_modules. Loading the
// app through tsx's loader hooks cost each test process about 1.5 s of CPU more than this (docs/decisions.md,
// "The test command"): every module resolved and loaded through a hook thread, 68 processes per run.
// The code is the same TypeScript, compiled by the same esbuild tsx uses; each source keeps its own
// `import.meta.url`, so the paths it finds from it (migrations, fixtures, the README, its own text) are unchanged.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { nodeEsmBundle } from './esbuild-node.ts';

/** Each of the checkout's TypeScript files keeps the URL of its own source, not the bundle's. */
const ownImportMetaUrl: Plugin = {
  name: 'own-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const text = await fs.promises.readFile(args.path, 'utf8');
      return { contents: text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)), loader: 'ts' };
    });
  },
};

/** Bundles `files` (paths from `root`, `test/x.test.ts`) into `outdir` (inside `root`); answers the bundles' paths, in order. */
export async function bundleTests(root: string, files: readonly string[], outdir: string): Promise<string[]> {
  await build({
    absWorkingDir: root,
    entryPoints: [...files],
    outbase: root,
    outdir,
    ...nodeEsmBundle,
    packages: 'external',
    plugins: [ownImportMetaUrl],
    sourcemap: 'linked',
  });
  return files.map((file) => path.join(outdir, file.replace(/\.ts$/, '.js')));
}
