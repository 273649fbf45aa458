// Allowed-IP lists of keys: single addresses and CIDR ranges, IPv4 and IPv6. IPv4-mapped
// IPv6 addresses (::ffff:10.0.0.1) are compared as the IPv4 address they carry.
import ipaddr from 'ipaddr.js';

export type IpMatcher = (ip: string) => boolean;

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

export function parseIpRange(entry: string): Range {
  const text = entry.trim();
  if (text.includes('/')) {
    const [addr, bits] = ipaddr.parseCIDR(text);
    return [normalize(addr), addr.kind() === 'ipv6' && normalize(addr).kind() === 'ipv4' ? bits - 96 : bits];
  }
  const addr = normalize(ipaddr.parse(text));
  return [addr, addr.kind() === 'ipv4' ? 32 : 128];
}

export function isValidIpRange(entry: string): boolean {
  try {
    parseIpRange(entry);
    return true;
  } catch {
    return false;
  }
}

/** A matcher for an allow-list; an empty list allows every address. */
export function compileAllowList(entries: readonly string[]): IpMatcher | null {
  if (entries.length === 0) return null;
  const ranges = entries.map(parseIpRange);
  return (ip: string) => {
    let addr: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      addr = normalize(ipaddr.parse(ip));
    } catch {
      return false;
    }
    return ranges.some(([base, bits]) => base.kind() === addr.kind() && addr.match(base as never, bits));
  };
}

function normalize(addr: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() ? (addr as ipaddr.IPv6).toIPv4Address() : addr;
}
