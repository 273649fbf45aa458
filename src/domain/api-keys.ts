// API keys (DECISIONS B.1): `<brand>_<live|test>_<secret><checksum>`, the secret 32 random
// base62 characters, the checksum 6 base62 characters of CRC32 over everything before it.
// A key whose checksum fails is refused without touching the database. Only a SHA-256 hash
// is stored: keys carry ~190 bits of entropy, so a slow hash would add latency, not safety.
import { hash, randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

export type KeyMode = 'live' | 'test';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BASE62_ONLY = /^[0-9A-Za-z]+$/;
const SECRET_LENGTH = 32;
const CHECKSUM_LENGTH = 6;

export interface GeneratedKey {
  key: string;
  hash: string;
  last4: string;
  mode: KeyMode;
}

export function generateApiKey(brand: string, mode: KeyMode): GeneratedKey {
  let secret = '';
  for (let i = 0; i < SECRET_LENGTH; i++) secret += BASE62[randomInt(62)];
  const body = `${brand}_${mode}_${secret}`;
  const key = body + checksum(body);
  return { key, hash: hashApiKey(key), last4: key.slice(-4), mode };
}

export interface ParsedKey {
  mode: KeyMode;
  hash: string;
}

/** The key's mode and hash, or undefined when its shape or checksum is wrong. */
export function parseApiKey(candidate: string, brand: string): ParsedKey | undefined {
  const prefixLength = brand.length + 6; // `<brand>_live_`
  if (candidate.length !== prefixLength + SECRET_LENGTH + CHECKSUM_LENGTH) return undefined;
  if (!candidate.startsWith(brand) || candidate[brand.length] !== '_' || candidate[prefixLength - 1] !== '_') return undefined;
  const mode = candidate.slice(brand.length + 1, prefixLength - 1);
  if (mode !== 'live' && mode !== 'test') return undefined;
  const rest = candidate.slice(prefixLength);
  if (!BASE62_ONLY.test(rest)) return undefined;
  const body = candidate.slice(0, -CHECKSUM_LENGTH);
  if (checksum(body) !== candidate.slice(-CHECKSUM_LENGTH)) return undefined;
  return { mode, hash: hashApiKey(candidate) };
}

/** One-shot `crypto.hash` (Node ≥ 20.12): a third of createHash's cost, on every authenticated request. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

function checksum(body: string): string {
  let n = crc32(body);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}
