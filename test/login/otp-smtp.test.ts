/**
 * Emailed codes over SMTP: nodemailer's SMTP transport talks to a minimal SMTP receiver on
 * loopback (RFC 5321 commands, no TLS on loopback), and the code it receives signs the person in.
 * The sign-in is driven over HTTP with the tests' form-filling browser.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import { Browser, relyingParty } from '../server/_support.ts';
import { alice, applyModel, loginServer, startApp, stopApp, tenantYaml, type LoginServer } from './_support.ts';

/** Accepts every message and keeps it: just enough SMTP for a real client. */
function smtpReceiver(): { server: Server; messages: { to: string[]; data: string }[] } {
  const messages: { to: string[]; data: string }[] = [];
  const server = createServer((socket) => {
    let buffer = '';
    let inData = false;
    let to: string[] = [];
    socket.write('220 loopback ESMTP test receiver\r\n');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          messages.push({ to, data: buffer.slice(0, end) });
          buffer = buffer.slice(end + 5);
          inData = false;
          to = [];
          socket.write('250 2.0.0 queued\r\n');
          continue;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol < 0) return;
        const line = buffer.slice(0, eol);
        buffer = buffer.slice(eol + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO' || verb === 'HELO') socket.write('250 loopback\r\n');
        else if (verb === 'MAIL') socket.write('250 2.1.0 ok\r\n');
        else if (verb === 'RCPT') {
          to.push(/<([^>]*)>/.exec(line)?.[1] ?? '');
          socket.write('250 2.1.5 ok\r\n');
        } else if (verb === 'DATA') {
          inData = true;
          socket.write('354 end with <CRLF>.<CRLF>\r\n');
        } else if (verb === 'QUIT') socket.end('221 2.0.0 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
  });
  return { server, messages };
}

let server: LoginServer;
const smtp = smtpReceiver();

beforeAll(async () => {
  await startApp();
  await new Promise<void>((r) => smtp.server.listen(0, '127.0.0.1', r));
  server = await loginServer({ smtpUrl: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`, mailFrom: 'Sign-in <signin@localhost>' });
  await applyModel(server, tenantYaml('post', '{ methods: [otp] }'));
});
afterAll(async () => {
  await server?.dispose();
  await new Promise((r) => smtp.server.close(r));
  await stopApp();
});

describe('emailed codes over SMTP', () => {
  it('delivers the code by SMTP and the code signs the person in', async () => {
    const user = alice('post');
    const config = await relyingParty(server.issuer('post'), 'app');
    const redirect = new URL(await startApp()).href;
    const browser = new Browser();
    const state = oidc.randomState();
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirect, scope: 'openid', state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const page = await browser.follow(url.href, redirect);
    const sent = await browser.submit(page.url, page.html!, '/login', { email: user.email, action: 'send' }, redirect);
    expect(sent.html).toContain('we sent it a code');

    for (let i = 0; i < 100 && smtp.messages.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(smtp.messages).toHaveLength(1);
    expect(smtp.messages[0]!.to).toEqual([user.email]);
    expect(smtp.messages[0]!.data).toMatch(/^From: "Sign-in" <signin@localhost>\r?$/m);
    const code = /^Your sign-in code is (\d{6})\r?$/m.exec(smtp.messages[0]!.data)![1]!;

    const back = await browser.submit(sent.url, sent.html!, '/login', { email: user.email, code, action: 'verify' }, redirect);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.url), { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.claims()!.sub).toBe(user.id);
  });
});
