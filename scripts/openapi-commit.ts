// `npm run openapi:commit`: writes the description the server serves to openapi/v1.json, the committed
// copy clients and reviewers diff against (test/openapi-committed.test.ts fails while it is stale).
// It first compares the new description with the committed one (scripts/openapi-breaking.ts) and
// refuses to overwrite it when a change breaks clients, unless run with `-- --accept-breaking`
// after the change is recorded in CHANGELOG.md (docs/api-guide.md, "Versions and deprecation").
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { breakingChanges } from './openapi-breaking.ts';
import { buildOpenApiJson, COMMIT_ENV } from './openapi-dump.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const COMMITTED = path.join(root, 'openapi', 'v1.json');

export const committedText = (json: string) => `${JSON.stringify(JSON.parse(json), null, 2)}\n`;

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const fresh = committedText(await buildOpenApiJson(COMMIT_ENV));
  if (existsSync(COMMITTED)) {
    const found = breakingChanges(JSON.parse(readFileSync(COMMITTED, 'utf8')), JSON.parse(fresh));
    if (found.length > 0 && !process.argv.includes('--accept-breaking')) {
      for (const line of found) console.error(line);
      console.error(
        `openapi:commit: ${found.length} breaking change(s) against ${path.relative(root, COMMITTED)}; not written. ` +
          'Record them in CHANGELOG.md and run `npm run openapi:commit -- --accept-breaking`.',
      );
      process.exit(1);
    }
    if (found.length > 0) console.log(`${found.length} breaking change(s) accepted`);
  }
  writeFileSync(COMMITTED, fresh);
  console.log(`${path.relative(root, COMMITTED)} written (${Object.keys(JSON.parse(fresh).paths).length} paths)`);
}
