/**
 * The cross-door property, bounded and seeded for npm test: random valid models and random
 * sequences of writes through idforge apply (two named managers), renames, SCIM, the console and the raw admin
 * API, against one real server, the invariants of test/doors/_cross-door.ts checked after every
 * step. bench/soak/doors.ts runs thousands and keeps the failing seeds.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testServer } from '../server/_support.ts';
import { runSequence, stepArb, type Harness } from './_cross-door.ts';

let h: Harness;
beforeAll(async () => {
  h = { server: await testServer(), tried: 0, ran: {} };
});
afterAll(async () => {
  await h?.server.dispose();
});

it('every door, every order: one manager per object, no takeover without a conflict or a force, lossless round trips, renames that orphan nothing, plans that converge', async () => {
  const runs = 24;
  await fc.assert(fc.asyncProperty(fc.array(stepArb, { minLength: 2, maxLength: 6 }), (steps) => runSequence(h, steps)), { numRuns: runs, seed: 20261125 });
  console.log(`cross-door: ${runs} sequences, ${h.tried} steps (${JSON.stringify(h.ran)} acted)`);
  // Every door acted in the bounded run (the console, SCIM and the raw admin API besides apply and renames).
  expect(Object.keys(h.ran).sort()).toEqual(['apply', 'console', 'raw', 'rename', 'scim-group']);
}, 600_000);
