/**
 * argon2id verifications per second at the server's parameters, alone: the ceiling for password
 * logins on this core. Run pinned to the server's core by index.ts; prints one JSON line.
 */
import argon2 from 'argon2';
import { PASSWORD_HASH_PARAMS } from '../../src/server/index.ts';

const seconds = Number(process.argv[2] ?? 5);
// Several in flight keep the core busy through libuv's thread pool, as concurrent logins do.
const inFlight = 4;
const hash = await argon2.hash('bench-password', PASSWORD_HASH_PARAMS);
for (let i = 0; i < 3; i++) await argon2.verify(hash, 'bench-password');
let done = 0;
const c0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
const until = Date.now() + seconds * 1000;
await Promise.all(Array.from({ length: inFlight }, async () => {
  while (Date.now() < until) {
    if (!(await argon2.verify(hash, 'bench-password'))) throw new Error('verify failed');
    done++;
  }
}));
const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
// CPU of the loop only (all threads: argon2 runs on libuv's pool), not of start-up.
const cpu = process.cpuUsage(c0);
process.stdout.write(`${JSON.stringify({ verifies: done, elapsed, cpuSeconds: (cpu.user + cpu.system) / 1e6 })}\n`);
