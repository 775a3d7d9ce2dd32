/**
 * The console's People search at 100,000 people: a real server in this process, one tenant with
 * 100,000 people (tenant batches of 20,000, no passwords), an administrator signed in to the console
 * over HTTP, then the time to the first page of the list, and to find one person near the start, in
 * the middle and at the end of the directory (following the search's next page as a person would,
 * should the match not be on the first: the directory searches itself, listUsers' `q`). Run it from
 * an older checkout to see the search that read the directory through the admin API, 500 at a time.
 *
 *   node bin/run.js tsx bench/console/people.ts [people]
 *
 * Prints figures; never fails on them.
 */
import { routePath } from '../../src/contract/index.ts';
import { Browser, PASSWORD, adminClient, fixtureTenant, testServer } from '../../test/server/_support.ts';
import { setupCheck, setupStep } from '../_setup.ts';

const N = Number(process.argv[2] ?? 100_000);
const T = 'big';
const server = await setupStep('start the server', () => testServer());
try {
  const admin = await adminClient(server);
  const f = await setupStep('make the tenant', () => fixtureTenant(admin, T));
  const made = performance.now();
  for (let from = 0; from < N; from += 20_000) {
    const users = Array.from({ length: Math.min(20_000, N - from) }, (_, i) => ({ id: `p-${String(from + i).padStart(6, '0')}`, body: { email: `person${from + i}@${T}.test`, displayName: `Person ${from + i}` } }));
    const r = await admin.call('POST', routePath('applyTenantBatch', { tenant: T }), { users });
    setupCheck(r.status === 200, `batch of people from ${from}`, `${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  }
  console.log(`made ${N.toLocaleString('en')} people in ${((performance.now() - made) / 1000).toFixed(1)} s`);

  const origin = new URL(server.issuer(T)).origin;
  const browser = new Browser();
  const never = 'never:';
  const signIn = await browser.follow(`${origin}/console/people`, never);
  const back = await browser.submit(signIn.url, signIn.html!, '/login', { email: f.users.alice.email, password: PASSWORD }, never);
  setupCheck(back.html?.includes('<h1>People</h1>') === true, 'sign in to the console', back.html?.slice(0, 300) ?? back.url);

  const timed = async (what: string, url: string, found: (html: string) => boolean) => {
    const started = performance.now();
    let next: string | undefined = url;
    let answers = 0;
    while (next !== undefined) {
      const page = await browser.follow(next, never);
      answers++;
      if (found(page.html ?? '')) break;
      const more = /href="([^"]*cursor=[^"]*)">(?:Search further|Next page)</.exec(page.html ?? '')?.[1]?.replace(/&amp;/g, '&');
      next = more === undefined ? undefined : new URL(more, origin).href;
    }
    console.log(`${what.padEnd(40)} ${(performance.now() - started).toFixed(0).padStart(6)} ms over ${answers} answer${answers === 1 ? '' : 's'}`);
  };
  await timed('first page of the list (50 people)', `${origin}/console/people`, (h) => h.includes('Next page'));
  await timed('a search nobody matches', `${origin}/console/people?q=nobody-here`, (h) => h.includes('No one matches'));
  for (const i of [100, Math.floor(N / 2), N - 1]) {
    await timed(`search "person${i}@" (${i.toLocaleString('en')}th)`, `${origin}/console/people?q=${encodeURIComponent(`person${i}@`)}`, (h) => h.includes(`Person ${i}<`));
  }
} finally {
  await server.dispose();
}
