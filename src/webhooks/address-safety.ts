// SSRF protection for webhook URLs: only public unicast addresses (IPv4 and IPv6) may be reached,
// checked at creation (a friendly 422) and again at delivery time against the address actually
// connected, so a DNS answer that changes after the check (rebinding) is refused too.
import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Private, loopback, link-local (cloud metadata), CGNAT, unique-local, multicast, reserved…: all refused. */
export function isPublicAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!ipaddr.isValid(bare)) return false;
  let address = ipaddr.parse(bare);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) address = (address as ipaddr.IPv6).toIPv4Address();
  return address.range() === 'unicast';
}

export class AddressRefusedError extends Error {
  readonly code = 'EADDRREFUSED';
  constructor(host: string) {
    super(`${host} resolves to an address that is not public`);
  }
}

/** A `lookup` for http(s).request that drops every non-public address of the answer. */
export function publicOnlyLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return (callback as (e: Error) => void)(err);
      const usable = allowPrivate ? addresses : addresses.filter((a) => isPublicAddress(a.address));
      const first = usable[0];
      if (!first) return (callback as (e: Error) => void)(new AddressRefusedError(hostname));
      if (options.all) (callback as (e: null, a: dns.LookupAddress[]) => void)(null, usable);
      else (callback as (e: null, a: string, f: number) => void)(null, first.address, first.family);
    });
  };
}

const LOCAL_NAMES = /(^|\.)(localhost|localdomain|internal|local)$/i;
const RESOLVE_TIMEOUT_MS = 2000;

/** The reason a URL is refused at creation, or null. Names that do not resolve yet are accepted:
 *  delivery checks every connection anyway. */
export async function urlRefusal(raw: string, allowPrivate: boolean): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not a valid URL';
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) return 'must use https://';
  if (url.username || url.password) return 'must not carry credentials';
  if (allowPrivate) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (ipaddr.isValid(host)) return isPublicAddress(host) ? null : 'must resolve to a public address';
  if (LOCAL_NAMES.test(host) || !host.includes('.')) return 'must resolve to a public address';
  const addresses = await Promise.race([
    dns.promises.lookup(host, { all: true }).catch(() => []),
    new Promise<dns.LookupAddress[]>((resolve) => setTimeout(() => resolve([]), RESOLVE_TIMEOUT_MS).unref()),
  ]);
  return addresses.some((a) => !isPublicAddress(a.address)) ? 'must resolve to a public address' : null;
}
