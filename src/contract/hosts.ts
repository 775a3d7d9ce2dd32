/**
 * The one answer to "is this host local?": `localhost`, any `*.localhost` (RFC 6761 §6.3: always
 * loopback) and loopback addresses. Plain http is acceptable only there (RFC 9700 §4.1.1), and
 * clients resolve such names to loopback themselves, as browsers do.
 */
export function isLocalHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127(?:\.\d{1,3}){3}$/.test(h);
}
