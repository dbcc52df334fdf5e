/**
 * The address of the client of a request [docs/decisions.md "Client addresses behind a proxy"]: the socket's peer,
 * unless that peer is one of the configured reverse proxies (TRUST_PROXY); then `X-Forwarded-For` is read from its
 * right end, past every trusted proxy, and the first address that is not one is the client's. Without TRUST_PROXY
 * the header is ignored (anyone can write it).
 */
import ipaddr from 'ipaddr.js';

/** @returns the address in canonical form (an IPv4-mapped IPv6 address as IPv4), or undefined when not one. */
function normalize(address: string | undefined): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (!address || !ipaddr.isValid(address.trim())) return undefined;
  const ip = ipaddr.parse(address.trim());
  return ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
}

/**
 * @param trusted the proxies, as CIDR ranges (lib/config.ts `trustProxy`).
 * @returns whether an address is one of them.
 */
function trustedBy(trusted: readonly string[]): (ip: ipaddr.IPv4 | ipaddr.IPv6) => boolean {
  const ranges = trusted.map((r) => ipaddr.parseCIDR(r));
  return (ip) => ranges.some(([net, bits]) => net.kind() === ip.kind() && ip.match([net, bits] as never));
}

/**
 * @param peer the socket's remote address.
 * @param forwardedFor the request's `X-Forwarded-For` header(s), if any.
 * @param trusted the trusted proxies (CIDR ranges).
 * @returns the client's address (the peer's when it is not a trusted proxy).
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: readonly string[]
): string {
  const socket = normalize(peer);
  if (!socket) return peer ?? '';
  const isTrusted = trustedBy(trusted);
  if (trusted.length === 0 || !isTrusted(socket)) return socket.toString();
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : (forwardedFor ?? '')).split(',');
  let client = socket;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalize(hops[i]);
    if (!hop) break; // a hop that is not an address: the chain cannot be followed further
    client = hop;
    if (!isTrusted(hop)) break;
  }
  return client.toString();
}
