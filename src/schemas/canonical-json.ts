// JSON with object keys sorted at every level, so equal values always give equal text: the
// request signature of an idempotent POST and the shape comparison of named OpenAPI schemas.

/** Canonical JSON text of a JSON value; `undefined` (no body) is the empty string. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return '';
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  );
}
