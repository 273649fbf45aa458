// What each resource key of an import file maps to: its table, the nested arrays stored in child
// tables, the values the API would fill in, and the few rules beyond column types (e-mails, enums,
// pix keys, numeric bounds), taken from the write schemas. Column types come from the database.
import type { TObject, TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import type { ResourceDescriptor, ValueRule } from '../resources/descriptor.ts';
import { RESOURCES } from '../resources/registry.ts';
import { FORMATS, NUMBER_FORMATS } from '../schemas/formats.ts';

export type { ValueRule };
/** A resource key of an import file: a resource's name with `_` (`bank_accounts`), or a table imported alongside one. */
export type ImportResourceName = string;

export interface ChildTable {
  table: string;
  /** Column holding the parent's id. */
  parentKey: string;
}

export interface ImportResource {
  table: string;
  /** Nested arrays of a record stored in their own table (`sales[].items`). */
  children?: Readonly<Record<string, ChildTable>>;
  /** Required columns the API fills in on create, filled the same way when the file leaves them out. */
  defaults?: Readonly<Record<string, () => unknown>>;
}

/** Tenant columns: set from the command line, never from the file. */
export { TENANT_COLUMNS } from '../infra/db/tenancy/tenancy.ts';

/** The one spelling of a resource in files: its name with `_` for `-`. */
export const importKey = (name: string): string => name.replaceAll('-', '_');

// The write schemas' own rules for the fields an import checks beyond column types, compiled by
// one Ajv with the API's formats: an imported value is refused where the API would refuse it, for
// the same reason. Only these fields: rules about how the API *creates* a record (lengths, a
// supplier's name, phone when e-mail is null) are not imposed on history brought from elsewhere.
const ruleAjv = new Ajv({ allErrors: false, coerceTypes: false, strict: false, validateFormats: true });
for (const [name, check] of Object.entries(FORMATS)) ruleAjv.addFormat(name, check);
for (const [name, validate] of Object.entries(NUMBER_FORMATS)) ruleAjv.addFormat(name, { type: 'number', validate });

/** The first refusal of a field's schema, in the import's words. */
function reasonOf(error: ErrorObject | undefined): string {
  if (!error) return 'is not valid';
  const at = error.instancePath.replace(/\/(\d+)/g, '[$1]').replace(/\/([^/]+)/g, '.$1');
  const params = error.params as Record<string, unknown>;
  const reason = (() => {
    switch (error.keyword) {
      case 'format':
        return params.format === 'email' ? 'must be an e-mail address' : `must be a ${String(params.format)}`;
      case 'enum':
        return `must be one of ${(params.allowedValues as unknown[]).join(', ')}`;
      case 'minimum':
        return `must be at least ${String(params.limit)}`;
      case 'exclusiveMinimum':
        return `must be greater than ${String(params.limit)}`;
      case 'maximum':
        return `must be at most ${String(params.limit)}`;
      case 'required':
        return `must have ${String(params.missingProperty)}`;
      default:
        return error.message ?? 'is not valid';
    }
  })();
  return at ? `${at} ${reason}` : reason;
}

/** Rules for `fields`, each the field's schema in `schema` (a write schema). */
function rulesFrom(schema: TObject, fields: readonly string[]): Record<string, ValueRule> {
  const rules: Record<string, ValueRule> = {};
  for (const field of fields) {
    const property = schema.properties[field];
    if (!property) throw new Error(`${String(schema.title)} has no field ${field}`);
    const validate = ruleAjv.compile(property);
    rules[field] = (value) => (validate(value) ? undefined : reasonOf(validate.errors?.[0]));
  }
  return rules;
}

/** The fields of a write schema with numeric bounds (SPEC part 2's `>= 0`, `> 0`, `0..100`, `>= 1`). */
function boundedFields(schema: TObject): string[] {
  return Object.entries(schema.properties)
    .filter(([, property]) =>
      [property, ...((property as TSchema).anyOf ?? [])].some(
        (s: TSchema) => s.minimum !== undefined || s.exclusiveMinimum !== undefined || s.maximum !== undefined,
      ),
    )
    .map(([field]) => field);
}

export interface ImportRegistry {
  resources: Readonly<Record<ImportResourceName, ImportResource>>;
  /** Resource keys in file order: each resource, then what is imported alongside it. */
  names: readonly ImportResourceName[];
  /** Every table the import writes, parents before children. */
  tables: readonly string[];
  /** Rules per table and column, beyond what the column type says. */
  rules: Readonly<Record<string, Readonly<Record<string, ValueRule>>>>;
}

/** The import side of `resources`, from their descriptors: tables, children, fills and the write schemas' rules. */
export function importRegistryOf(resources: readonly ResourceDescriptor[]): ImportRegistry {
  const entries: [ImportResourceName, ImportResource][] = [];
  const rules: Record<string, Record<string, ValueRule>> = {};
  for (const d of resources) {
    const spec = d.import ?? {};
    const children = Object.fromEntries(
      Object.entries(spec.children ?? {}).map(([f, c]) => [f, { table: c.table, parentKey: c.parentKey }]),
    );
    entries.push([
      importKey(d.name),
      { table: d.table, ...(spec.children ? { children } : {}), ...(spec.defaults ? { defaults: spec.defaults } : {}) },
    ]);
    const create = d.write?.create;
    if (create) {
      const own = { ...rulesFrom(create, [...boundedFields(create), ...(spec.checked ?? [])]), ...spec.rules };
      if (Object.keys(own).length > 0) rules[d.table] = own;
      for (const [field, child] of Object.entries(spec.children ?? {})) {
        const item = (create.properties[field] as TSchema | undefined)?.items as TObject | undefined;
        if (item?.properties) rules[child.table] = rulesFrom(item, [...boundedFields(item), ...(child.checked ?? [])]);
      }
    }
    for (const [key, alongside] of Object.entries(spec.alongside ?? {})) entries.push([key, { table: alongside.table }]);
  }
  const registry = Object.fromEntries(entries);
  return {
    resources: registry,
    names: entries.map(([key]) => key),
    tables: entries.flatMap(([, r]) => [r.table, ...Object.values(r.children ?? {}).map((c) => c.table)]),
    rules,
  };
}

/** The import side of the served resources. */
export const SERVED = importRegistryOf(RESOURCES);
export const IMPORT_RESOURCES = SERVED.resources;
export const IMPORT_RESOURCE_NAMES = SERVED.names;
/** Every table the import writes, parents before children. */
export const IMPORT_TABLES = SERVED.tables;
/** Rules per table and column, beyond what the column type says. */
export const COLUMN_RULES = SERVED.rules;
