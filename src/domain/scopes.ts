// Scopes (SPEC 5.3): `<resource>:read|write`, `*:read`, `*:write`; a write scope implies the
// read scope of the same resource, and `*:write` implies every read and write. `events` (the
// change feed) is read-only: `events:write` grants nothing more than `events:read`.
export const SCOPE_RESOURCES = [
  'customers',
  'sales',
  'suppliers',
  'expenses',
  'appointments',
  'services',
  'products',
  'inventory',
  'bank-accounts',
  'deals',
  'projects',
  'forms',
  'vehicles',
  'pets',
  'events',
  'webhooks',
] as const;

export type ScopeResource = (typeof SCOPE_RESOURCES)[number];
export type Access = 'read' | 'write';

const SCOPE_PATTERN = /^(\*|[a-z]+(?:-[a-z]+)*):(read|write)$/;

export function isValidScope(scope: string): boolean {
  const m = SCOPE_PATTERN.exec(scope);
  return !!m && (m[1] === '*' || (SCOPE_RESOURCES as readonly string[]).includes(m[1] as string));
}

/** Precomputed at authentication so the per-request check is one Set lookup. */
export function expandScopes(scopes: readonly string[]): ReadonlySet<string> {
  const granted = new Set<string>();
  for (const scope of scopes) {
    const m = SCOPE_PATTERN.exec(scope);
    if (!m) continue;
    const [, resource, access] = m;
    const resources = resource === '*' ? SCOPE_RESOURCES : [resource as ScopeResource];
    for (const r of resources) {
      granted.add(`${r}:read`);
      if (access === 'write') granted.add(`${r}:write`);
    }
  }
  return granted;
}
