/**
 * The multi-host test bed (docs/decisions.md "Several hosts"): real separate network hosts on one machine. Each host
 * is a Linux network namespace with its own address, joined to the others by a bridge and a veth pair; the test
 * process itself sits on the bridge (the root namespace) and reaches every host by its address, as a load balancer
 * or a client on the same network would. Nothing crosses hosts over 127.0.0.1: each namespace has its own loopback.
 *
 * Making namespaces needs root (CI runs as root) and iproute2's `ip`. {@link bedUnavailable} says why a bed cannot be
 * made, so the test fails saying so instead of passing quietly.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';

/** One host of the bed. */
export interface BedHost {
  name: string;
  /** Its network namespace. */
  ns: string;
  /** Its address on the bridge. */
  address: string;
}

export interface Bed {
  /** The test process's own address on the bridge (clients, the fake model, webhook receivers listen here). */
  gateway: string;
  hosts: Record<string, BedHost>;
  /**
   * @param host a host's name.
   * @returns the argv prefix that runs a command on that host.
   */
  prefix(host: string): string[];
  /**
   * Cuts (or restores) the link between two hosts: packets from `from` to `to` are dropped silently, as on a
   * broken link, while both stay reachable to everyone else.
   */
  cut(from: string, to: string): void;
  restore(from: string, to: string): void;
  /** Removes every namespace and the bridge (processes on the hosts must be stopped first). */
  destroy(): void;
}

function ip(args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** @returns why no bed can be made on this machine, or undefined when it can. */
export function bedUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'the multi-host bed needs root (network namespaces): run the tests as root';
  try {
    ip(['-V']);
  } catch {
    return 'the multi-host bed needs iproute2 (`ip`): apt-get install -y iproute2';
  }
  const probe = `aasprobe${randomBytes(2).toString('hex')}`;
  try {
    ip(['netns', 'add', probe]);
    ip(['netns', 'del', probe]);
  } catch (err) {
    return `network namespaces cannot be made here: ${(err as Error).message.split('\n')[0]}`;
  }
  return undefined;
}

/**
 * Makes the hosts. Addresses: 10.213.<random>.0/24, the bridge .1, the hosts .10, .11, … in the order given.
 * @param names host names.
 * @returns the bed.
 */
export function createBed(names: string[]): Bed {
  const id = randomBytes(2).toString('hex');
  const subnet = `10.213.${randomInt(1, 255)}`;
  const bridge = `aas${id}`;
  const gateway = `${subnet}.1`;
  const hosts: Record<string, BedHost> = {};
  const made: string[] = [];
  const destroy = (): void => {
    for (const ns of made) {
      try {
        ip(['netns', 'del', ns]);
      } catch {
        // already gone
      }
    }
    try {
      ip(['link', 'del', bridge]);
    } catch {
      // already gone
    }
  };
  try {
    ip(['link', 'add', bridge, 'type', 'bridge']);
    ip(['addr', 'add', `${gateway}/24`, 'dev', bridge]);
    ip(['link', 'set', bridge, 'up']);
    names.forEach((name, i) => {
      const ns = `aas${id}-${name}`;
      const outer = `v${id}${i}a`;
      const inner = `v${id}${i}b`;
      const address = `${subnet}.${10 + i}`;
      ip(['netns', 'add', ns]);
      made.push(ns);
      ip(['link', 'add', outer, 'type', 'veth', 'peer', 'name', inner]);
      ip(['link', 'set', inner, 'netns', ns]);
      ip(['link', 'set', outer, 'master', bridge, 'up']);
      ip(['-n', ns, 'addr', 'add', `${address}/24`, 'dev', inner]);
      ip(['-n', ns, 'link', 'set', inner, 'up']);
      ip(['-n', ns, 'link', 'set', 'lo', 'up']);
      hosts[name] = { name, ns, address };
    });
  } catch (err) {
    destroy();
    throw err;
  }
  const host = (name: string): BedHost => {
    const h = hosts[name];
    if (!h) throw new Error(`no host ${name} in the bed`);
    return h;
  };
  return {
    gateway,
    hosts,
    prefix: (name) => ['ip', 'netns', 'exec', host(name).ns],
    cut: (from, to) => void ip(['-n', host(from).ns, 'route', 'add', 'blackhole', `${host(to).address}/32`]),
    restore: (from, to) => void ip(['-n', host(from).ns, 'route', 'del', 'blackhole', `${host(to).address}/32`]),
    destroy,
  };
}
