/**
 * Emailed codes over SMTP: nodemailer's SMTP transport talks to a real SMTP server on loopback
 * (smtp-server, test/support/smtp.ts; no TLS on loopback), and the code it receives signs the person
 * in. The message has a text and an HTML part, both naming the tenant. The sign-in is driven over
 * HTTP with the tests' form-filling browser.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oidc from 'openid-client';
import { Browser, relyingParty } from '../server/_support.ts';
import { smtpSink, type SmtpSink } from '../support/smtp.ts';
import { alice, applyModel, loginServer, startApp, stopApp, tenantYaml, type LoginServer } from './_support.ts';

let server: LoginServer;
let smtp: SmtpSink;

beforeAll(async () => {
  await startApp();
  smtp = await smtpSink();
  server = await loginServer({ smtpUrl: smtp.url, mailFrom: 'Sign-in <signin@localhost>' });
  await applyModel(server, tenantYaml('post', '{ methods: [otp] }'));
});
afterAll(async () => {
  await server?.dispose();
  await smtp?.close();
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

    const mail = await smtp.next(user.email);
    expect(smtp.messages).toHaveLength(1);
    expect(mail.to).toEqual([user.email]);
    expect(mail.raw).toMatch(/^From: "Sign-in" <signin@localhost>\r?$/m);
    expect(mail.subject).toBe('Your sign-in code for Post Inc.');
    const code = /^Your sign-in code is (\d{6})$/m.exec(mail.text)![1]!;
    expect(mail.html).toContain(`Your sign-in code is ${code}`);
    expect(mail.html).toContain('Post Inc.');

    const back = await browser.submit(sent.url, sent.html!, '/login', { email: user.email, code, action: 'verify' }, redirect);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.url), { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.claims()!.sub).toBe(user.id);
  });
});
