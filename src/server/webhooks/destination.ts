/**
 * Where a webhook may be delivered (no server-side request forgery): the URL's host is resolved,
 * every address it resolves to is checked, and the connection goes to the checked address (the
 * socket's lookup is pinned to it), so a name that resolves to a public address when checked and to
 * an internal one when connecting (DNS rebinding) reaches nothing internal. Without the operator's
 * leave (`webhooks.allowPrivateAddresses`, `idforge serve --webhook-private-addresses`), no
 * delivery goes to loopback, private (RFC 1918, RFC 4193), link-local (cloud metadata endpoints at
 * 169.254.169.254 among them), shared (RFC 6598), multicast, reserved or unspecified addresses.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24],
  ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) PRIVATE.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['2001:db8::', 32], ['64:ff9b::', 96], ['100::', 64]] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv6');
}

/** Whether an address is one a webhook may not reach without the operator's leave. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return PRIVATE.check(address, 'ipv4');
  if (family !== 6) return true;
  // IPv4-mapped IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it is.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped !== null ? PRIVATE.check(mapped[1]!, 'ipv4') : PRIVATE.check(address, 'ipv6');
}

export class RefusedDestination extends Error {
  override readonly name = 'RefusedDestination';
}

/** The address to connect to for `url`, checked; RefusedDestination when none may be reached. */
export async function destinationOf(url: URL, allowPrivate: boolean): Promise<{ address: string; family: 4 | 6 }> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(host);
  const found = literal !== 0 ? [{ address: host, family: literal }] : await lookup(host, { all: true, verbatim: true }).catch((err: NodeJS.ErrnoException) => {
    throw new RefusedDestination(`cannot resolve ${host}: ${err.code ?? err.message}`);
  });
  const usable = allowPrivate ? found : found.filter((a) => !isPrivateAddress(a.address));
  if (usable.length === 0) {
    throw new RefusedDestination(`${host} resolves to ${found.map((a) => a.address).join(', ')}: private, loopback or link-local addresses are not delivered to (the server's operator may allow them: --webhook-private-addresses)`);
  }
  // IPv4 first, as Node resolved before v17: a name with both (`*.localhost` is ::1 and 127.0.0.1)
  // is most often served on IPv4 only (the generated apps listen on 127.0.0.1 for a local origin).
  const a = usable.find((x) => x.family === 4) ?? usable[0]!;
  return { address: a.address, family: a.family === 6 ? 6 : 4 };
}
