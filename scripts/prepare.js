// npm's `prepare` (run by `npm ci` / `npm install` in a checkout, and by `npm pack`): builds dist/ when the
// build tools (devDependencies: tsx, esbuild) are installed. Without them (`npm ci --omit=dev`) it builds
// nothing and says so, instead of failing the install: the release tarball (`npm pack`) carries dist/ already.
// Plain JavaScript on purpose: it must run where TypeScript tools are absent.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const installed = (name) => {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
};

if (!installed('tsx') || !installed('esbuild')) {
  process.stderr.write('balcao prepare: build tools (devDependencies) not installed; dist/ not rebuilt\n');
  process.exit(0);
}
const root = new URL('..', import.meta.url);
const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: root, stdio: 'inherit' });
process.exit(result.status ?? 1);
