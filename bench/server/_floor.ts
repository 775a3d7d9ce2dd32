/**
 * The floor a grant's cost is measured against: how many JWS signatures node:crypto makes per
 * CPU-second, with the alg and key size the server uses (ES256 on P-256, RS256 on RSA-2048),
 * signing an access token's worth of bytes. Run as its own process pinned to the server's core
 * (grants.ts), so both figures come from the same core in the same run.
 *
 *   taskset -c 0 node --import tsx bench/server/_floor.ts [seconds=3]
 * prints one JSON line: {"ES256": <signatures per CPU-second>, "RS256": ...}
 */
import { generateKeyPairSync, sign } from 'node:crypto';

const seconds = Number(process.argv[2] ?? 3);
// The size of a typical access token's signing input (header.payload, base64url).
const input = Buffer.from('e'.repeat(520));

function rate(alg: 'ES256' | 'RS256'): number {
  const { privateKey } = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
  const opts = alg === 'ES256' ? { key: privateKey, dsaEncoding: 'ieee-p1363' as const } : privateKey;
  for (let i = 0; i < 200; i++) sign('sha256', input, opts);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < seconds * 1000) {
    for (let i = 0; i < 50; i++) sign('sha256', input, opts);
    n += 50;
  }
  const cpu = process.cpuUsage(cpu0);
  return n / ((cpu.user + cpu.system) / 1e6);
}

console.log(JSON.stringify({ ES256: Math.round(rate('ES256')), RS256: Math.round(rate('RS256')) }));
