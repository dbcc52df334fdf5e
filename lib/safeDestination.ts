/**
 * Safe outbound destinations (docs/architecture.md §8) for webhooks and git clones: https only, and every address a
 * host name resolves to is checked at connect time, inside the socket's own DNS lookup, so the address checked is
 * the address connected to (no time-of-check/time-of-use gap, no DNS rebinding). Private, loopback, link-local,
 * CGNAT (100.64/10), unique-local v6, IPv4-mapped/compatible v6 forms of those, and cloud-metadata addresses are
 * refused unless `allowPrivate` (WEBHOOK_ALLOW_PRIVATE=true). The resolver is injectable, so tests prove a
 * refusal without sending a packet anywhere.
 *
 * Use: `https.request(url, { lookup: safeLookup({ allowPrivate }) })` (or an undici Agent's `connect.lookup`),
 * after {@link assertSafeUrl} (a literal IP address in the URL is never looked up by Node, so it is checked there).
 */
import { promises as dns } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** One resolved address, as `dns.promises.lookup(host, { all: true })` gives it. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to all its addresses (default: the system resolver, `dns.promises.lookup` with all). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface SafeDestinationOptions {
  /** Allow private, loopback, link-local, CGNAT and metadata addresses (WEBHOOK_ALLOW_PRIVATE=true). */
  allowPrivate: boolean;
  /** Injectable resolver (tests); defaults to the system resolver. */
  resolver?: Resolver;
}

/**
 * Thrown (or passed to the lookup callback) when a destination is refused; `code` is stable. `message` is for the
 * client; `detail` says why, for the log only (a host name refused for its addresses and one that does not resolve
 * get the same message, so that the service is no oracle of internal names: issue 38).
 */
export class UnsafeDestinationError extends Error {
  readonly code = 'unsafe_destination';
  readonly detail: string;
  constructor(message: string, detail: string = message) {
    super(message);
    this.name = 'UnsafeDestinationError';
    this.detail = detail;
  }
}

/**
 * @param host a host name.
 * @returns the one message of every refusal of a host name, whatever its reason (private addresses, no address,
 *   no such name) [docs/decisions.md "One message for every refused destination"].
 */
export const refusedHostMessage = (host: string): string =>
  `${host} is not an allowed destination: it must resolve to public addresses only`;

/** Resolver failures that mean the name has no address (not a failure worth retrying). */
const NO_SUCH_NAME = new Set(['ENOTFOUND', 'ENODATA', 'ENONAME']);

/**
 * Addresses refused even though they are public unicast: cloud metadata / host services reachable at a public
 * address (Azure's wire server). The link-local (169.254.169.254, fe80::/10), CGNAT (Alibaba 100.100.100.200) and
 * unique-local (AWS fd00:ec2::254) metadata addresses already fall in refused ranges.
 */
const METADATA_ADDRESSES = new Set(['168.63.129.16']);

const systemResolver: Resolver = async (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

/**
 * @param address an IPv4 or IPv6 literal (no brackets).
 * @returns why the address is refused ("loopback", "private", …), or undefined when it is a public unicast one.
 */
export function refusalReason(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return 'not an IP address';
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6') {
    const v6 = ip as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) ip = v6.toIPv4Address();
    else {
      const parts = v6.parts;
      // ::/16 holds the unspecified and loopback addresses and the IPv4-compatible (::a.b.c.d) and translated
      // (::ffff:0:a.b.c.d) forms; only 2000::/3 is global unicast.
      if (parts[0] === 0) return 'reserved IPv6 (embedded IPv4 or loopback)';
      const range = v6.range();
      if (range !== 'unicast') return range;
      if ((parts[0]! & 0xe000) !== 0x2000) return 'not global unicast IPv6';
      return METADATA_ADDRESSES.has(v6.toNormalizedString()) ? 'cloud metadata' : undefined;
    }
  }
  const v4 = ip as ipaddr.IPv4;
  const range = v4.range();
  if (range !== 'unicast') return range;
  return METADATA_ADDRESSES.has(v4.toString()) ? 'cloud metadata' : undefined;
}

/**
 * @param address an IP literal.
 * @returns whether it is refused when private destinations are not allowed.
 */
export function isPrivateAddress(address: string): boolean {
  return refusalReason(address) !== undefined;
}

/**
 * Checks a destination URL's form: `https:`, no credentials, and a literal IP host must be a public one unless
 * allowed (Node never looks a literal up, so the connect-time check would not see it).
 * @param raw the URL.
 * @param options allowPrivate.
 * @returns the parsed URL.
 * @throws UnsafeDestinationError with a client-safe message.
 */
export function assertSafeUrl(raw: string, options: Pick<SafeDestinationOptions, 'allowPrivate'>): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeDestinationError('The destination is not a valid URL');
  }
  if (url.protocol !== 'https:') throw new UnsafeDestinationError('The destination must use https');
  if (url.username !== '' || url.password !== '')
    throw new UnsafeDestinationError('The destination must not carry credentials');
  if (url.hostname === '') throw new UnsafeDestinationError('The destination has no host');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (!options.allowPrivate && isIP(host) !== 0) {
    const reason = refusalReason(host);
    if (reason !== undefined) throw new UnsafeDestinationError(`The destination address is not public (${reason})`);
  }
  return url;
}

/**
 * Resolves a host and checks every address (all must be public unless allowed: one private answer refuses the
 * host, so a mixed answer cannot be raced).
 * @param hostname a host name or IP literal.
 * @param options allowPrivate and an optional resolver.
 * @returns the addresses.
 * @throws UnsafeDestinationError when an address is refused, there is none or the name does not exist (one message
 *   for all: {@link refusedHostMessage}; the reason in `detail`).
 */
export async function resolveSafe(hostname: string, options: SafeDestinationOptions): Promise<ResolvedAddress[]> {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  const family = isIP(host);
  let addresses: ResolvedAddress[];
  try {
    addresses = family !== 0 ? [{ address: host, family }] : await (options.resolver ?? systemResolver)(host);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && NO_SUCH_NAME.has(code))
      throw new UnsafeDestinationError(refusedHostMessage(host), `${host} does not resolve (${code})`);
    throw err; // a resolver in trouble (EAI_AGAIN, a timeout): worth another try
  }
  if (addresses.length === 0) throw new UnsafeDestinationError(refusedHostMessage(host), `${host} has no address`);
  if (!options.allowPrivate) {
    for (const a of addresses) {
      const reason = refusalReason(a.address);
      if (reason !== undefined)
        throw new UnsafeDestinationError(
          refusedHostMessage(host),
          `${host} resolves to an address that is not public (${reason})`
        );
    }
  }
  return addresses;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `net.connect` / `https.request` / an undici Agent's `connect`, resolving through
 * {@link resolveSafe}: the socket connects only to an address that passed the check.
 * @param options allowPrivate and an optional resolver.
 * @returns the lookup function (honours `options.all` and `options.family`).
 */
export function safeLookup(
  options: SafeDestinationOptions
): (hostname: string, lookupOptions: LookupOptions | number | undefined, callback: LookupCallback) => void {
  return (hostname, lookupOptions, callback) => {
    const opts: LookupOptions = typeof lookupOptions === 'object' ? lookupOptions : { family: lookupOptions };
    resolveSafe(hostname, options).then(
      (all) => {
        const wanted = opts.family === 4 || opts.family === 6 ? all.filter((a) => a.family === opts.family) : all;
        if (wanted.length === 0) {
          const detail = `${hostname} has no IPv${String(opts.family)} address`;
          callback(new UnsafeDestinationError(refusedHostMessage(hostname), detail) as NodeJS.ErrnoException, '');
          return;
        }
        if (opts.all)
          callback(
            null,
            wanted.map((a) => ({ address: a.address, family: a.family }))
          );
        else callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (err: unknown) => callback(err as NodeJS.ErrnoException, '')
    );
  };
}

/** The host names of the loopback interface as a URL's `hostname` writes them. */
const LOOPBACK_HOSTNAMES = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * @param hostname a URL's `hostname`.
 * @returns whether it names the loopback interface (a native client's redirect URI, RFC 8252 §7.3; a provider on
 *   the same machine).
 */
export function isLoopbackHostname(hostname: string): boolean {
  return LOOPBACK_HOSTNAMES.includes(hostname);
}
