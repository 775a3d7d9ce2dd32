/**
 * Links that set a password, mailed to the person: `recovery` (a forgotten password, asked for on the
 * sign-in page or sent by an administrator) and `invitation` (an account made without a password,
 * through the model, the console or SCIM). Every door that sends one (the sign-in page's "Forgot
 * password?", the admin API, the console through it) and the page that redeems one call this file.
 *
 * A link holds 32 random bytes; storage keeps their HMAC under a master-derived key, as an artifact
 * carrying the account (so disabling or deleting the person ends it, and a tenant's deletion or
 * rename too). It is single use and short-lived (LOGIN_DEFAULTS: 30 minutes for recovery, 7 days for
 * an invitation). The password it sets goes through the one writer of users (writeUser), so the
 * tenant's password policy judges it as at every other door. Setting it signs nobody in: the person
 * signs in afterwards, second factor included, so a mailbox alone never opens an account that asks
 * for more. A recovery ends the person's sessions and tokens (whoever held the old password is out).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { RESERVED_TENANTS, issuerUrl } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { ServerError, errors } from '../errors.ts';
import { passwordLinkMail } from '../login/mail-templates.ts';
import { MailNotConfigured } from '../login/mailer.ts';
import { LOGIN_DEFAULTS } from '../login/options.ts';
import type { TenantRecord, UserRecord } from '../storage/types.ts';
import { requireUser, reserved } from './rules.ts';
import { writeUser } from './users.ts';

export type PasswordLinkKind = 'recovery' | 'invitation';

/** The artifact model links are kept under, and the one that remembers a recent mail (resend guard). */
export const PASSWORD_LINK_MODEL = 'PasswordLink';
const RECENT_MAIL_MODEL = 'PasswordLinkMailed';

/** Where a link leads on the tenant host: `/password/<token>`. */
export const PASSWORD_LINK_PATH = '/password';

interface Stored {
  readonly [key: string]: unknown;
  readonly accountId: string;
  readonly kind: PasswordLinkKind;
  /** The sign-in (interaction) the person asked from, to continue it afterwards. */
  readonly uid?: string;
}

export const lifetimeOf = (kind: PasswordLinkKind) =>
  kind === 'invitation' ? LOGIN_DEFAULTS.invitationLifetimeSeconds : LOGIN_DEFAULTS.recoveryLifetimeSeconds;

function storedId(ctx: ServerContext, tenant: string, token: string): string {
  return createHmac('sha256', ctx.master.derive('password-link')).update(`${tenant}\0${token}`).digest('base64url');
}

/** A token as a link may carry one: 43 characters of base64url. Anything else is no link, unread. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface LinkSent {
  /** False when a link of this kind was mailed to the person moments ago (the resend guard): that one stands. */
  readonly sent: boolean;
  readonly expiresAt: number;
}

/**
 * Makes a link and mails it. `awaitDelivery`: an administrator's request waits for the mail server
 * and hears its refusal; the sign-in page does not (an SMTP round trip would tell which addresses
 * have accounts), and a failure is an audit line. At most one mail of a kind per person per 30 s.
 */
export async function sendPasswordLink(
  ctx: ServerContext, tenant: TenantRecord, user: UserRecord, kind: PasswordLinkKind, options: { readonly uid?: string; readonly awaitDelivery: boolean },
): Promise<LinkSent> {
  const s = ctx.storage.grants;
  const lifetime = lifetimeOf(kind);
  const expiresAt = Math.floor(Date.now() / 1000) + lifetime;
  const recentKey = `${kind}:${user.id}`;
  if ((await s.find(tenant.name, RECENT_MAIL_MODEL, recentKey)) !== undefined) return { sent: false, expiresAt };
  await s.upsert(tenant.name, RECENT_MAIL_MODEL, recentKey, { accountId: user.id }, LOGIN_DEFAULTS.passwordLinkResendSeconds);
  const token = randomBytes(32).toString('base64url');
  const stored: Stored = { accountId: user.id, kind, ...(options.uid === undefined ? {} : { uid: options.uid }) };
  await s.upsert(tenant.name, PASSWORD_LINK_MODEL, storedId(ctx, tenant.name, token), stored, lifetime);
  const url = `${new URL(issuerUrl(ctx.address(), tenant.name)).origin}${PASSWORD_LINK_PATH}/${token}`;
  const mail = ctx.login.mailer.send({ name: tenant.name, mail: tenant.body.mail }, { to: user.body.email, ...passwordLinkMail(kind, tenant.body.displayName, user.body.email, url, lifetime) });
  if (options.awaitDelivery) {
    try {
      await mail;
    } catch (err) {
      // The link is useless unmailed: take it back, and let the next request try again at once.
      await s.destroy(tenant.name, PASSWORD_LINK_MODEL, storedId(ctx, tenant.name, token));
      await s.destroy(tenant.name, RECENT_MAIL_MODEL, recentKey);
      ctx.login.audit({ audit: 'mail.failure', tenant: tenant.name, user: user.id, error: (err as Error).message });
      if (err instanceof MailNotConfigured) throw new ServerError(409, 'mail_not_configured', err.message);
      throw new ServerError(502, 'mail_not_sent', `the ${kind === 'invitation' ? 'invitation' : 'recovery link'} could not be mailed to ${user.body.email}: the mail server (${ctx.login.mailer.describeFor({ name: tenant.name, mail: tenant.body.mail })}) refused or could not be reached; nothing was sent, try again`, true);
    }
  } else {
    mail.catch((err: unknown) => ctx.login.audit({ audit: 'mail.failure', tenant: tenant.name, user: user.id, error: (err as Error).message }));
  }
  return { sent: true, expiresAt };
}

/**
 * The directory's rule for an administrator's request (admin API, console): the person exists and is
 * enabled; an invitation goes only to someone without a password (a recovery link to anyone). Then
 * the link is mailed, and the answer says where and until when.
 */
export async function sendPasswordLinkFor(ctx: ServerContext, tenantName: string, userId: string, kind: PasswordLinkKind): Promise<{ readonly email: string; readonly kind: PasswordLinkKind; readonly sent: boolean; readonly expiresAt: string }> {
  if (RESERVED_TENANTS.includes(tenantName)) throw reserved(tenantName);
  const tenant = await ctx.storage.tenants.get(tenantName);
  if (tenant === undefined) throw errors.notFound(`tenant '${tenantName}' does not exist`);
  const user = requireUser(tenantName, userId, await ctx.storage.users.get(tenantName, userId));
  if (user.body.disabled) throw errors.conflict(`user '${userId}' is disabled: enable them first`, 'disabled');
  if (kind === 'invitation' && user.passwordHash !== null) {
    throw errors.conflict(`user '${userId}' has a password already: send a recovery link instead`, 'hasPassword');
  }
  const r = await sendPasswordLink(ctx, tenant, user, kind, { awaitDelivery: true });
  return { email: user.body.email, kind, sent: r.sent, expiresAt: new Date(r.expiresAt * 1000).toISOString() };
}

export interface OpenLink {
  readonly user: UserRecord;
  readonly kind: PasswordLinkKind;
  readonly uid: string | undefined;
  /** The key it is stored under (for the CSRF token of its form). */
  readonly id: string;
}

/** The link's person and kind, while it is valid; undefined for anything else (malformed, expired, used, a disabled person). */
export async function openPasswordLink(ctx: ServerContext, tenant: string, token: string): Promise<OpenLink | undefined> {
  if (!TOKEN.test(token)) return undefined;
  const id = storedId(ctx, tenant, token);
  const stored = (await ctx.storage.grants.find(tenant, PASSWORD_LINK_MODEL, id)) as Stored | undefined;
  if (stored === undefined) return undefined;
  const user = await ctx.storage.users.get(tenant, stored.accountId);
  if (user === undefined || user.body.disabled) return undefined;
  return { user, kind: stored.kind, uid: stored.uid, id };
}

/**
 * Sets the person's password through the one writer of users (the tenant's policy judges it: a
 * refusal is a ServerError at `password`, and the link stays usable), then uses the link up and, for
 * a recovery, ends every session and token of the person. The caller holds the person's throttle
 * keys (GuessingDefence.serialize), so one link cannot be redeemed twice at once.
 */
export async function redeemPasswordLink(ctx: ServerContext, tenant: string, link: OpenLink, password: string): Promise<void> {
  await writeUser(ctx, tenant, link.user.id, { body: { ...link.user.body }, password });
  await ctx.storage.grants.destroy(tenant, PASSWORD_LINK_MODEL, link.id);
  if (link.kind === 'recovery') await ctx.storage.grants.revokeUser(tenant, link.user.id);
}
