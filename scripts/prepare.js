// npm's `prepare` (run by `npm ci` / `npm install` in a checkout, and by `npm pack`): applies patches/ to
// node_modules (patch-package) and builds dist/ when the build tools (devDependencies) are installed. Without them (`npm ci --omit=dev`) it builds
// nothing and says so, instead of failing the install: the release tarball (`npm pack`) carries dist/ already.
// Plain JavaScript on purpose: it must run where TypeScript tools are absent.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

// `npx balcao` in a checkout installs the checkout into npm's npx cache (a `file:` dependency) the first time, which
// runs this script there: dist/ is built already (npm ci did it), and rebuilding it would take it from under the
// processes running from it (a test suite, a server).
if (process.env.npm_command === 'exec' && existsSync(new URL('../dist/cli/main.js', import.meta.url))) process.exit(0);

const require = createRequire(import.meta.url);
const installed = (name) => {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
};

if (!installed('tsx') || !installed('esbuild') || !installed('patch-package')) {
  process.stderr.write('balcao prepare: build tools (devDependencies) not installed; dist/ not rebuilt\n');
  process.exit(0);
}
const root = new URL('..', import.meta.url);
// Before the build: dist/ bundles the patched driver, so a release carries the patch (docs/decisions.md).
const patched = spawnSync(process.execPath, [require.resolve('patch-package/index.js'), '--error-on-fail'], {
  cwd: root,
  stdio: 'inherit',
});
if (patched.status !== 0) process.exit(patched.status ?? 1);
const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: root, stdio: 'inherit' });
process.exit(result.status ?? 1);
