// The databases tests start from, made once and then copied: creating an embedded database (initdb inside
// WebAssembly) costs about a second of CPU and migrating one more, where loading a dump or copying a folder
// costs a fraction of that; on PostgreSQL, `CREATE DATABASE ... TEMPLATE` replaces migrating each database.
// `npm test` (scripts/test.ts) makes them before the run, in BALCAO_TEST_TEMPLATES, for every test process
// to share; a test file run alone makes its own, in a temporary folder removed when it exits.
// Each is named by a hash of what it is made from (the migrations, the PGlite version): a stale one is never used.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { openDatabase } from '../../src/infra/db/engine/database.ts';
import { prepareDatabase } from '../../src/events/capture/setup.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MIGRATIONS = path.join(ROOT, 'migrations');

const hashOf = (...parts: (string | Buffer)[]) => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\0');
  return hash.digest('hex').slice(0, 12);
};

const pgliteVersion = (): string =>
  JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')).version as string;

const migrationsHash = (): string => {
  const files = fs
    .readdirSync(MIGRATIONS)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  return hashOf(...files.flatMap((f) => [f, fs.readFileSync(path.join(MIGRATIONS, f))]));
};

let ownFolder: string | undefined;
/** Where templates are kept: the run's shared folder, or one of this process's own. */
function folder(): string {
  const shared = process.env.BALCAO_TEST_TEMPLATES;
  if (shared) {
    fs.mkdirSync(shared, { recursive: true });
    return shared;
  }
  if (!ownFolder) {
    const made = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-templates-'));
    process.once('exit', () => fs.rmSync(made, { recursive: true, force: true }));
    ownFolder = made;
  }
  return ownFolder;
}

/** Makes `target` with `build` (into a scratch path beside it) unless it exists; concurrent makers are safe: the
 *  first rename wins and the others' copies are discarded. */
async function once(target: string, build: (into: string) => Promise<void>): Promise<string> {
  if (fs.existsSync(target)) return target;
  const building = `${target}.building-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await build(building);
    fs.renameSync(building, target);
  } catch (err) {
    if (!fs.existsSync(target)) throw err;
  } finally {
    fs.rmSync(building, { recursive: true, force: true });
  }
  return target;
}

/**
 * The dump's bytes as the Blob PGlite reads a data folder from. PGlite only asks for `arrayBuffer()` and only reads
 * it (it untars the bytes into its in-memory file system). Node's own Blob hands the 40 MB over in chunks joined
 * into a new buffer, about 0.6 s of CPU per database opened, a sixth of a small test file's; this one hands over
 * the file's own bytes.
 */
class DumpBlob extends Blob {
  readonly #bytes: Buffer;
  constructor(bytes: Buffer) {
    super([]);
    this.#bytes = bytes;
  }
  override get size(): number {
    return this.#bytes.byteLength;
  }
  override arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = this.#bytes;
    // A file this large is read into a buffer of its own (Node pools only small ones): the whole of it is the dump.
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    return Promise.resolve(
      (whole ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) as ArrayBuffer,
    );
  }
}

let snapshot: Promise<Blob> | undefined;
/** A dump of a migrated in-memory embedded database, to open new ones from (openDatabase's `snapshot`). */
export function migratedEmbeddedSnapshot(): Promise<Blob> {
  snapshot ??= once(path.join(folder(), `pglite-migrated-${hashOf(pgliteVersion(), migrationsHash())}.tar`), async (into) => {
    const database = await openDatabase({ databaseUrl: undefined, dataDir: 'memory://' });
    try {
      await prepareDatabase(database);
      if (database.driver.engine !== 'pglite') throw new Error('expected the embedded engine');
      // Less of the log to replay when a copy opens.
      await database.driver.pg.exec('CHECKPOINT');
      const dump = await database.driver.pg.dumpDataDir('none');
      fs.writeFileSync(into, Buffer.from(await dump.arrayBuffer()));
    } finally {
      await database.close();
    }
  }).then((file) => new DumpBlob(fs.readFileSync(file)));
  return snapshot;
}

let dataDir: Promise<string> | undefined;
/** An embedded database's data folder as its first use leaves it, before any migration. */
function embeddedDataDir(): Promise<string> {
  dataDir ??= once(path.join(folder(), `pglite-datadir-${hashOf(pgliteVersion())}`), async (building) => {
    const database = await openDatabase({ databaseUrl: undefined, dataDir: building }, 'test template');
    await database.close();
  });
  return dataDir;
}

/** Fills `into` (a new or empty folder) with what `balcao` would make there at its first use, in a copy. */
export async function copyEmbeddedDataDir(into: string): Promise<void> {
  fs.cpSync(await embeddedDataDir(), into, { recursive: true });
}

const templates = new Map<string, Promise<string>>();
/** The name of a migrated database on the server of `adminUrl` to create test databases from. It is kept on the
 *  server (one per set of migrations), so later runs start from it at once. */
export function postgresTemplate(adminUrl: string): Promise<string> {
  let made = templates.get(adminUrl);
  if (!made) {
    made = makePostgresTemplate(adminUrl, `balcao_template_${migrationsHash()}`);
    templates.set(adminUrl, made);
  }
  return made;
}

async function makePostgresTemplate(adminUrl: string, name: string): Promise<string> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    // One maker at a time across processes; the template appears under its name only once it is complete.
    await admin`SELECT pg_advisory_lock(hashtext(${name}))`;
    const [present] = await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`;
    if (!present) {
      const building = `${name}_building_${randomBytes(4).toString('hex')}`;
      await admin.unsafe(`CREATE DATABASE ${building}`);
      try {
        const database = await openDatabase({ databaseUrl: databaseUrl(adminUrl, building), dataDir: '' });
        try {
          await prepareDatabase(database);
        } finally {
          await database.close();
        }
        await admin.unsafe(`ALTER DATABASE ${building} RENAME TO ${name}`);
      } catch (err) {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
        throw err;
      }
    }
    await admin`SELECT pg_advisory_unlock(hashtext(${name}))`;
    return name;
  } finally {
    await admin.end();
  }
}

/** `adminUrl` with another database name. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Makes the templates this checkout's tests use, in `into`, and on PostgreSQL when `adminUrl` is given. */
export async function makeTemplates(into: string, adminUrl?: string): Promise<void> {
  process.env.BALCAO_TEST_TEMPLATES = into;
  await Promise.all([migratedEmbeddedSnapshot(), embeddedDataDir()]);
  if (adminUrl) await postgresTemplate(adminUrl);
}
