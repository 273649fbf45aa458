// PGlite's WebAssembly, compiled once per process. Its own module file, free of PGlite and Kysely, so
// `balcao serve` can start the compile before it loads anything else (src/cli/serve.ts).
import { readFile } from 'node:fs/promises';

let compiledEngine: Promise<WebAssembly.Module> | undefined;

/**
 * Reads PGlite's WebAssembly (beside its own module) and compiles it: V8 compiles it on background
 * threads, so the main thread stays free for whatever the caller does meanwhile. PGlite would do
 * the same, only after its other start-up steps on the main thread.
 */
export function compileEngine(): Promise<WebAssembly.Module> {
  // Once per process: tests and the import open many embedded databases.
  compiledEngine ??= readFile(new URL('./pglite.wasm', import.meta.resolve('@electric-sql/pglite'))).then((bytes) =>
    WebAssembly.compile(bytes),
  );
  return compiledEngine;
}
