// Writes the OpenAPI document to a file (or stdout) by building the app in-process, without
// listening and without a database: what CI lints and generates types from.
//   node --import tsx scripts/openapi-dump.ts [out.json]
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/infra/db/engine/database.ts';

/** The committed copy (openapi/v1.json) is made from no deployment's settings: its server is `/`, not an address. */
export const COMMIT_ENV: NodeJS.ProcessEnv = { BALCAO_PUBLIC_URL: '' };

/** The document as the server serves it, for the given environment (BALCAO_PUBLIC_URL…). */
export async function buildOpenApiJson(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const config = loadConfig({ ...env, DATABASE_URL: '', REDIS_URL: '' });
  // The document comes from the routes, never from data: a postgres.js pool connects on its first
  // query, so this one (pointing nowhere) is never used, and the dump skips booting PGlite.
  const database = await openDatabase({ databaseUrl: 'postgres://openapi-dump@127.0.0.1:9/none', dataDir: '' });
  const app = await buildApp({ config, database, logger: false });
  try {
    await app.ready();
    return app.openapiJson();
  } finally {
    await app.close();
    await database.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const json = await buildOpenApiJson();
  const out = process.argv[2];
  const pretty = `${JSON.stringify(JSON.parse(json), null, 2)}\n`;
  if (out) writeFileSync(out, pretty);
  else process.stdout.write(pretty);
}
