// `npm run build`: bundles the CLI and the server into dist/ with esbuild, so a command loads a few
// files instead of some 600 modules (resolving and opening them was half of `balcao serve`'s start).
// Each command stays its own chunk, loaded only when that command runs (src/cli/main.ts imports it
// on demand); code two commands share goes into a shared chunk. Type checking is `npm run typecheck`.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { nodeEsmBundle } from './esbuild-node.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist');

/**
 * Left to Node's own loader, from node_modules:
 * - PGlite reads its WebAssembly and file bundle next to its own module (import.meta.url);
 * - pino-pretty is only loaded for a terminal, and carries its own dependencies;
 * - ioredis and Scalar are found at run time through createRequire (src/infra/rate-limit/redis-store.ts,
 *   src/docs/reference-page.ts); listing them keeps esbuild from ever inlining them.
 */
const external = ['@electric-sql/pglite', 'pino-pretty', 'ioredis', '@scalar/fastify-api-reference'];

fs.rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ['src/cli/main.ts'],
  outbase: 'src',
  outdir,
  ...nodeEsmBundle,
  external,
  // Bundled CommonJS packages (Fastify, Ajv, pino…) call require() for Node's own modules.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  sourcemap: true,
  // A process keeps each loaded chunk's source as a string for V8 to compile functions lazily. Comments and
  // indentation were a third of it, and one non-ASCII character in a comment stores a whole chunk two bytes a
  // character: 5.4 MB of a served process's heap for 2.9 MB of files. Stacks keep their lines through the map.
  minifyWhitespace: true,
  // Licence comments (`/*!`) go to a .LEGAL.txt file beside their chunk, shipped with it.
  legalComments: 'external',
});
