/**
 * A malicious or broken SSF transmitter against the API template's receiver (templates/api/server.js,
 * receiveSignals): the real template, started as its own process against a transmitter written here,
 * which is also the issuer (its keys sign the API's access tokens and the SETs), so it can send SETs
 * that verify but are odd inside, besides forged ones. Each generated input is one poll answer:
 *
 * - SETs that revoke a person, properly signed: that person's earlier tokens are refused from then on,
 *   and the next poll acknowledges them;
 * - forged SETs (another key, alg none, HS256 keyed with the public key, another issuer or audience,
 *   another typ) about another person: nothing changes for them (their token is still taken), and the
 *   next poll reports each in setErrs and acknowledges none;
 * - signed SETs malformed inside (events or the subject of the wrong type, odd timestamps), values
 *   that are no JWT, and answers that are no poll answer (other statuses, no JSON, null, arrays).
 *
 * Throughout, the API stays up, serves, and a malformed SET never stops the ones beside it or after
 * it from being read (a poison SET would leave revoked tokens taken).
 */
import { createHmac, generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEADLINE_MS, fuzz } from '../support/fuzz.ts';
import { exchange } from '../support/fuzz-http.ts';
import { REPO_ROOT, freePort, startProcess, waitForPort, type RunningProcess } from '../support/processes.ts';

const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
const ACCOUNT_DISABLED = 'https://schemas.openid.net/secevent/risc/event-type/account-disabled';
const POLL = 'urn:ietf:rfc:8936';
const AUDIENCE = 'https://api.fuzz.test';
const STREAM_AUD = 'urn:fuzz:api-stream';
const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v), 'utf8').toString('base64url');

const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const otherKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...key.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' };
const es256 = (header: Record<string, unknown>, payload: unknown, k = key.privateKey) => {
  const data = `${b64(header)}.${b64(payload)}`;
  return `${data}.${sign('sha256', Buffer.from(data), { key: k, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
};

/** A poll the API made: its body, and the answer to give it. */
interface Poll { readonly body: { ack?: unknown; setErrs?: unknown }; respond(status: number, text: string): void }

describe('the API template\'s SSF receiver survives a hostile transmitter and takes only the SETs it should', { timeout: 180_000 }, () => {
  let dir: string;
  let transmitter: http.Server;
  let issuer: string;
  let api: RunningProcess;
  let apiPort: number;
  const polls: Poll[] = [];
  let pollWaiter: (() => void) | undefined;
  const held: http.ServerResponse[] = [];

  beforeAll(async () => {
    transmitter = http.createServer((req, res) => {
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (text += c));
      req.on('end', () => {
        const json = (v: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(v));
        const path = (req.url ?? '').split('?')[0];
        if (path === '/oauth2/.well-known/jwks.json') return json({ keys: [jwk] });
        if (path === '/.well-known/ssf-configuration') return json({ issuer, configuration_endpoint: `${new URL(issuer).origin}/ssf/streams`, spec_version: '1_0' });
        if (path === '/ssf/streams') return json([{ stream_id: 's1', aud: STREAM_AUD, delivery: { method: POLL, endpoint_url: `${new URL(issuer).origin}/ssf/poll/s1` } }]);
        if (path === '/ssf/poll/s1' && req.method === 'POST') {
          held.push(res);
          polls.push({ body: JSON.parse(text) as Poll['body'], respond: (status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(body) });
          pollWaiter?.();
          return;
        }
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => transmitter.listen(0, '127.0.0.1', r));
    issuer = `http://127.0.0.1:${(transmitter.address() as AddressInfo).port}/oauth2/`;

    dir = mkdtempSync(join(tmpdir(), 'idforge-fuzz-api-'));
    cpSync(join(REPO_ROOT, 'templates', 'api', 'server.js'), join(dir, 'server.js'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    apiPort = await freePort();
    writeFileSync(join(dir, 'api-config.json'), JSON.stringify({
      issuer, jwks_uri: `${issuer}.well-known/jwks.json`, audience: AUDIENCE, origin: `http://127.0.0.1:${apiPort}`,
      public_routes: ['/'], routes: [{ path: '/whoami', scopes: [] }], ssf_configuration_url: `${new URL(issuer).origin}/.well-known/ssf-configuration`,
    }));
    api = startProcess('fuzz-api-signals', process.execPath, ['server.js'], { cwd: dir, env: { PORT: String(apiPort), SSF_RECEIVER_TOKEN: 'ssf_fuzz.receiver-token' } });
    await waitForPort(apiPort, { process: api });
  }, 60_000);
  afterAll(async () => {
    await api?.stop();
    for (const res of held) res.destroy();
    transmitter?.closeAllConnections();
    await new Promise<void>((r) => (transmitter ? transmitter.close(() => r()) : r()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  /** The API's next poll (after a restart of its receiver too: it finds the stream again first); a deadline fails the test. */
  async function nextPoll(): Promise<Poll> {
    const until = Date.now() + 3 * DEADLINE_MS;
    while (polls.length === 0) {
      if (api.hasExited()) throw new Error(`the API exited:\n${api.output()}`);
      if (Date.now() > until) throw new Error(`hang: the API polled no more within ${(3 * DEADLINE_MS) / 1000} s:\n${api.output().slice(-2000)}`);
      await new Promise<void>((r) => {
        pollWaiter = r;
        setTimeout(r, 200);
      });
    }
    return polls.shift()!;
  }

  /** An access token of `sub` issued a minute ago, as the tenant would sign it. */
  const accessToken = (sub: string) => {
    const now = Math.floor(Date.now() / 1000);
    return es256({ alg: 'ES256', typ: 'at+jwt', kid: 'k1' }, { iss: issuer, aud: AUDIENCE, sub, iat: now - 60, exp: now + 600, scp: [], jti: randomUUID() });
  };
  const whoami = (sub: string) => exchange(apiPort, { method: 'GET', host: `127.0.0.1:${apiPort}`, path: '/whoami', headers: { authorization: `Bearer ${accessToken(sub)}` } });

  const setClaims = (sub: string, jti: string, over: Record<string, unknown> = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return { iss: issuer, aud: STREAM_AUD, jti, iat: now, events: { [SESSION_REVOKED]: { event_timestamp: now } }, sub_id: { format: 'iss_sub', iss: issuer, sub }, ...over };
  };
  const SET_HEADER = { alg: 'ES256', typ: 'secevent+jwt', kid: 'k1' };

  type Forgery = 'other-key' | 'none' | 'hs256' | 'issuer' | 'audience' | 'typ' | 'truncated' | 'not-a-string';
  const forge = (f: Forgery, claims: Record<string, unknown>): unknown => {
    switch (f) {
      case 'other-key': return es256(SET_HEADER, claims, otherKey.privateKey);
      case 'none': return `${b64({ alg: 'none', typ: 'secevent+jwt' })}.${b64(claims)}.`;
      case 'hs256': {
        const data = `${b64({ ...SET_HEADER, alg: 'HS256' })}.${b64(claims)}`;
        return `${data}.${createHmac('sha256', JSON.stringify(jwk)).update(data).digest('base64url')}`;
      }
      case 'issuer': return es256(SET_HEADER, { ...claims, iss: 'http://evil.test/oauth2/' });
      case 'audience': return es256(SET_HEADER, { ...claims, aud: 'urn:someone-else' });
      case 'typ': return es256({ ...SET_HEADER, typ: 'JWT' }, claims);
      case 'truncated': return es256(SET_HEADER, claims).slice(0, -10);
      case 'not-a-string': return { jwt: es256(SET_HEADER, claims) };
    }
  };
  /** Signed, but odd inside: the claims a careless or broken transmitter might send. */
  const odd = fc.constantFrom<Record<string, unknown>>(
    { events: null }, { events: 'x' }, { events: [] }, { events: { [SESSION_REVOKED]: null } }, { events: { [SESSION_REVOKED]: 'x' } }, { events: { [ACCOUNT_DISABLED]: 0 } },
    { events: { [SESSION_REVOKED]: { event_timestamp: 'abc' } } }, { events: { [SESSION_REVOKED]: { event_timestamp: 1e309 } } }, { events: { [SESSION_REVOKED]: { event_timestamp: -1 } } },
    { sub_id: null }, { sub_id: 'x' }, { sub_id: { format: 'complex', user: null, application: 7 } }, { sub_id: { format: 'iss_sub', iss: 'http://evil.test/', sub: 'u-x' } },
    { iat: 'now' }, { jti: null }, { events: { ['__proto__']: {} } },
  );

  const answer = fc.record({
    // A few of each; their order in the answer shuffled.
    good: fc.nat({ max: 2 }),
    forged: fc.array(fc.constantFrom<Forgery>('other-key', 'none', 'hs256', 'issuer', 'audience', 'typ', 'truncated', 'not-a-string'), { maxLength: 3 }),
    odd: fc.array(odd, { maxLength: 2 }),
    junk: fc.array(fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('a.b.c', '', 'e30.e30.', null, 0, [], {})), { maxLength: 2 }),
    order: fc.nat(),
    // Mostly a poll answer; sometimes none (the receiver backs off a second, then finds the stream again).
    shape: fc.oneof({ weight: 30, arbitrary: fc.constant<'sets' | 'moreSets'>('sets') }, { weight: 3, arbitrary: fc.constant<'moreSets'>('moreSets') },
      { weight: 1, arbitrary: fc.constantFrom('status-500', 'status-401', 'not-json', 'null', 'array', 'sets-string', 'sets-null', 'huge-string') }),
  });

  it('poll answers: revoked stays revoked, forged changes nothing, nothing stops the receiver', async () => {
    let n = 0;
    let previous: { good: string[]; goodJtis: string[]; bad: string[]; forgedJtis: string[]; restarts: boolean } | undefined;
    let poll = await nextPoll();
    const check = async (p: Poll) => {
      if (previous === undefined) return;
      const ack = Array.isArray(p.body.ack) ? (p.body.ack as string[]) : [];
      const errs = p.body.setErrs !== null && typeof p.body.setErrs === 'object' ? Object.keys(p.body.setErrs as object) : [];
      const what = `after answer ${n}: ${JSON.stringify(previous)}; next poll ${JSON.stringify(p.body).slice(0, 1000)}\n${api.output().slice(-1500)}`;
      if (!previous.restarts) {
        // Acknowledged: what verified; reported in setErrs: every forgery.
        for (const j of previous.goodJtis) expect(ack, what).toContain(j);
        for (const j of previous.forgedJtis) {
          expect(ack, what).not.toContain(j);
          expect(errs, what).toContain(j);
        }
      }
      // Revoked by a SET that verified: refused; named only by forgeries: taken.
      for (const sub of previous.good) expect((await whoami(sub)).status, `${sub} ${what}`).toBe(401);
      for (const sub of previous.bad) expect((await whoami(sub)).status, `${sub} ${what}`).toBe(200);
    };
    await fuzz('API template: SSF poll answers from a hostile transmitter', answer, async (a) => {
      n++;
      const sets: [string, unknown][] = [];
      const good: string[] = [];
      const goodJtis: string[] = [];
      const bad: string[] = [];
      const forgedJtis: string[] = [];
      for (let i = 0; i < a.good; i++) {
        const sub = `u-good-${n}-${i}`;
        const jti = `j-${n}-good-${i}`;
        good.push(sub);
        goodJtis.push(jti);
        sets.push([jti, es256(SET_HEADER, setClaims(sub, jti))]);
      }
      a.forged.forEach((f, i) => {
        const sub = `u-bad-${n}-${i}`;
        const jti = `j-${n}-forged-${i}`;
        bad.push(sub);
        forgedJtis.push(jti);
        sets.push([jti, forge(f, setClaims(sub, jti))]);
      });
      a.odd.forEach((o, i) => sets.push([`j-${n}-odd-${i}`, es256(SET_HEADER, setClaims(`u-odd-${n}-${i}`, `j-${n}-odd-${i}`, o))]));
      a.junk.forEach((v, i) => sets.push([`j-${n}-junk-${i}`, v]));
      // Shuffled (a rotation): malformed SETs before and after the good ones.
      const k = sets.length === 0 ? 0 : a.order % sets.length;
      const ordered = Object.fromEntries([...sets.slice(k), ...sets.slice(0, k)]);
      const restarts = !(a.shape === 'sets' || a.shape === 'moreSets');
      const text = {
        sets: JSON.stringify({ sets: ordered, moreAvailable: false }), moreSets: JSON.stringify({ sets: ordered, moreAvailable: true }),
        'status-500': '{"error":"server_error"}', 'status-401': '{"error":"invalid_token"}', 'not-json': '<html>', null: 'null', array: '[1,2]',
        'sets-string': '{"sets":"abc"}', 'sets-null': '{"sets":null}', 'huge-string': JSON.stringify({ sets: { big: 'x'.repeat(2_000_000) } }),
      }[a.shape];
      poll.respond(a.shape === 'status-500' ? 500 : a.shape === 'status-401' ? 401 : 200, text);
      previous = { good: restarts ? [] : good, goodJtis: restarts ? [] : goodJtis, bad, forgedJtis, restarts };
      poll = await nextPoll();
      await check(poll);
    }, 150, [
      // Found by this suite: a signed SET whose event was null threw in the receiver, which restarted
      // without acknowledging or reporting anything of that answer, and met the same SET first again.
      { good: 1, forged: ['other-key'], odd: [{ events: { [SESSION_REVOKED]: null } }], junk: [], order: 1, shape: 'sets' },
      { good: 1, forged: [], odd: [{ events: 'x' }], junk: [], order: 1, shape: 'sets' },
    ]);
    // The API still serves: its public route, and a token no SET named.
    expect((await exchange(apiPort, { method: 'GET', host: `127.0.0.1:${apiPort}`, path: '/' })).status).toBe(200);
    expect((await whoami('u-never-named')).status).toBe(200);
    expect(api.hasExited()).toBe(false);
  });
});
