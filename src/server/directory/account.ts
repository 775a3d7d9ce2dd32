/**
 * A person's own account, as the directory keeps it: their sign-in factors (TOTP, passkeys), their
 * password, their sessions and the applications they signed in to. The admin API answers these
 * (the account page at /account/ and the console call it), so every door runs the same rules:
 *
 * - a factor is never removed when it is the last one the tenant's required second factor needs,
 *   nor the last way the person can sign in at all (an administrator's reset is the exception: the
 *   person enrols again at their next sign-in);
 * - a password change needs the current password, which the guessing defence guards as at sign-in,
 *   and the new one passes the tenant's policy (through the one writer of users);
 * - ending a session ends the grants made in it, so the refresh tokens of its applications stop
 *   working; ending an application ends its grants and tokens.
 */
import { createHash } from 'node:crypto';
import { issuerUrl, type UserFactorsView, type UserSessionsView } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { verifyPassword } from '../_crypto.ts';
import { ServerError, errors } from '../errors.ts';
import { passkeyRegistrationOptions, rememberChallenge, savePasskeyRegistration, takeChallenge, type PasskeyParty } from '../login/factor-passkey.ts';
import { totpSealedFor, totpStep } from '../login/factor-totp.ts';
import { GuessingDefence } from '../login/throttle.ts';
import { normalizeEmail } from '../login/types.ts';
import type { TenantRecord, UserRecord } from '../storage/types.ts';
import { judgePassword, requireClientApplication, requireUser } from './rules.ts';
import { writeUser } from './users.ts';

const iso = (s: number) => new Date(s * 1000).toISOString();

async function load(ctx: ServerContext, tenant: string, userId: string): Promise<{ t: TenantRecord; user: UserRecord }> {
  const t = await ctx.storage.tenants.get(tenant);
  if (t === undefined) throw errors.notFound(`tenant '${tenant}' does not exist`);
  return { t, user: requireUser(tenant, userId, await ctx.storage.users.get(tenant, userId)) };
}

export async function factorsOf(ctx: ServerContext, tenant: string, userId: string): Promise<UserFactorsView> {
  const { t, user } = await load(ctx, tenant, userId);
  const totp = await ctx.storage.users.getTotp(tenant, userId);
  const passkeys = await ctx.storage.users.listPasskeys(tenant, userId);
  return {
    hasPassword: user.passwordHash !== null,
    totp: totp === undefined ? null : { createdAt: iso(totp.createdAt) },
    passkeys: passkeys.map((p) => ({ id: p.credentialId, createdAt: iso(p.createdAt) })),
    secondFactorRequired: t.body.login?.requireSecondFactor === true,
    passkeysAllowed: (t.body.login?.methods ?? ['password']).includes('passkey'),
  };
}

/**
 * Why removing a factor would lock the person out or below the tenant's policy; undefined when it
 * may go. `after`: what the person would hold without it.
 */
export function removalRefusal(t: TenantRecord, hasPassword: boolean, after: { readonly totp: boolean; readonly passkeys: number }): string | undefined {
  const methods: readonly string[] = t.body.login?.methods ?? ['password'];
  const passkey = methods.includes('passkey') && after.passkeys > 0;
  const canStart = (methods.includes('password') && hasPassword) || methods.includes('otp') || passkey;
  if (!canStart) return 'it is your last way to sign in: add another first';
  if (t.body.login?.requireSecondFactor !== true) return undefined;
  // An emailed code can always follow a password; a passkey is two factors by itself.
  const second = methods.includes('otp') || (methods.includes('totp') && after.totp) || passkey;
  return second ? undefined : `${t.body.displayName} requires a second step at sign-in, and this is your last one: add another first`;
}

/**
 * An authenticator app the person set up elsewhere than at sign-in (the account page): its key, and a
 * code it shows now, checked as at sign-in (±1 time step); that step is recorded, so the code does not
 * work again. One app a person: another is refused until the first is removed.
 */
export async function enrolTotp(ctx: ServerContext, tenant: string, userId: string, secret: string, code: string): Promise<UserFactorsView> {
  await load(ctx, tenant, userId);
  if ((await ctx.storage.users.getTotp(tenant, userId)) !== undefined) throw errors.conflict(`user '${userId}' has an authenticator app already: remove it first`, 'totp');
  const step = await totpStep(secret, code);
  if (step === undefined) throw errors.invalidRequest('body.code: that code does not match the key: check that the app shows this key and that its clock is right', 'body.code');
  await ctx.storage.users.putTotp(tenant, userId, ctx.master.seal(secret, totpSealedFor(tenant, userId)), step);
  ctx.login.audit({ audit: 'totp.enrolled', tenant, user: userId, factor: 'totp', via: 'account' });
  return factorsOf(ctx, tenant, userId);
}

/** Where the tenant's passkeys live: its origin, and its host name as the relying party id. */
function partyOf(ctx: ServerContext, t: TenantRecord): PasskeyParty {
  const origin = new URL(issuerUrl(ctx.address(), t.name)).origin;
  return { rpName: t.body.displayName, rpId: new URL(origin).hostname, origin };
}

function requirePasskeysAllowed(t: TenantRecord): void {
  if (!(t.body.login?.methods ?? ['password']).includes('passkey')) {
    throw errors.conflict(`${t.body.displayName} does not accept passkeys at sign-in (its login methods leave them out), so none can be added`, 'passkey');
  }
}

const enrolmentKey = (userId: string) => `account:${userId}:register`;

/**
 * A passkey the person adds on the account page, in two steps as WebAuthn has them: the options (a
 * challenge for the tenant's relying party id, kept 5 minutes, one at a time per person), then the
 * browser's response to them, verified against that challenge and the tenant's origin as at sign-in.
 * Only where the tenant's login methods include passkeys.
 */
export async function startPasskeyEnrolment(ctx: ServerContext, tenant: string, userId: string): Promise<{ readonly options: Readonly<Record<string, unknown>> }> {
  const { t, user } = await load(ctx, tenant, userId);
  requirePasskeysAllowed(t);
  const options = await passkeyRegistrationOptions(partyOf(ctx, t), ctx.storage, tenant, user);
  await rememberChallenge(ctx.storage, tenant, enrolmentKey(userId), options.challenge);
  return { options: options as unknown as Record<string, unknown> };
}

export async function enrolPasskey(ctx: ServerContext, tenant: string, userId: string, credential: unknown): Promise<UserFactorsView> {
  const { t, user } = await load(ctx, tenant, userId);
  requirePasskeysAllowed(t);
  const challenge = await takeChallenge(ctx.storage, tenant, enrolmentKey(userId));
  const refused = await savePasskeyRegistration(partyOf(ctx, t), ctx.storage, ctx.login.audit, tenant, user, credential, challenge, 'account');
  if (refused !== undefined) throw errors.invalidRequest(`body.credential: ${refused}`, 'body.credential');
  return factorsOf(ctx, tenant, userId);
}

export async function removeTotp(ctx: ServerContext, tenant: string, userId: string): Promise<void> {
  const { t, user } = await load(ctx, tenant, userId);
  if ((await ctx.storage.users.getTotp(tenant, userId)) === undefined) throw errors.notFound(`user '${userId}' has no authenticator app`);
  const passkeys = (await ctx.storage.users.listPasskeys(tenant, userId)).length;
  const why = removalRefusal(t, user.passwordHash !== null, { totp: false, passkeys });
  if (why !== undefined) throw errors.conflict(`the authenticator app cannot be removed: ${why}`, 'totp');
  await ctx.storage.users.deleteTotp(tenant, userId);
}

export async function removePasskey(ctx: ServerContext, tenant: string, userId: string, credentialId: string): Promise<void> {
  const { t, user } = await load(ctx, tenant, userId);
  const passkeys = await ctx.storage.users.listPasskeys(tenant, userId);
  if (!passkeys.some((p) => p.credentialId === credentialId)) throw errors.notFound(`user '${userId}' has no such passkey`);
  const totp = (await ctx.storage.users.getTotp(tenant, userId)) !== undefined;
  const why = removalRefusal(t, user.passwordHash !== null, { totp, passkeys: passkeys.length - 1 });
  if (why !== undefined) throw errors.conflict(`the passkey cannot be removed: ${why}`, 'passkey');
  await ctx.storage.users.deletePasskey(tenant, userId, credentialId);
}

/**
 * An administrator's reset: the authenticator app and every passkey go, and with them every session
 * and token (whoever held a lost device is out); the person enrols again at their next sign-in.
 */
export async function resetFactors(ctx: ServerContext, tenant: string, userId: string): Promise<void> {
  await load(ctx, tenant, userId);
  await ctx.storage.users.deleteTotp(tenant, userId);
  for (const p of await ctx.storage.users.listPasskeys(tenant, userId)) await ctx.storage.users.deletePasskey(tenant, userId, p.credentialId);
  await ctx.storage.grants.revokeUser(tenant, userId);
}

/**
 * Changes a password, the current one required. Wrong current passwords count as failed sign-ins of
 * the account (and of `clientAddress`, the browser's address the account page passes on), with the
 * same backoff and lockout; a locked account is refused in the same words as at sign-in.
 */
export async function changePassword(ctx: ServerContext, tenant: string, userId: string, current: string, next: string, clientAddress: string | undefined): Promise<void> {
  const { t, user } = await load(ctx, tenant, userId);
  // The policy's words at this operation's field, before the current password is even checked.
  judgePassword(t, user.body.email, next, 'newPassword');
  if (user.passwordHash === null) throw errors.conflict(`user '${userId}' has no password to change: send them an invitation`, 'currentPassword');
  const defence = new GuessingDefence(ctx.storage.throttle, ctx.login);
  const keys = { account: normalizeEmail(user.body.email), address: clientAddress ?? 'admin-api' };
  await defence.serialize(tenant, keys, async () => {
    const refusal = await defence.check(tenant, keys, 'password-change');
    if (refusal !== undefined) throw new ServerError(429, 'too_many_attempts', refusal, true, 'currentPassword');
    if (!(await verifyPassword(user.passwordHash ?? undefined, current))) {
      const locked = await defence.failure(tenant, keys, 'password-change', 'wrong current password');
      throw locked === undefined
        ? new ServerError(403, 'access_denied', 'currentPassword is not the current password', true, 'currentPassword')
        : new ServerError(429, 'too_many_attempts', locked, true, 'currentPassword');
    }
    await writeUser(ctx, tenant, userId, { body: { ...user.body }, password: next });
    await defence.success(tenant, keys);
    ctx.login.audit({ audit: 'password.set', via: 'change', tenant, user: userId, address: keys.address });
  });
}

/** Lifts the lock the guessing defence put on the person's account (and its failure count); whether it was locked. */
export async function unlockUser(ctx: ServerContext, tenant: string, userId: string): Promise<{ wasLocked: boolean }> {
  const { user } = await load(ctx, tenant, userId);
  const key = `account:${normalizeEmail(user.body.email)}`;
  const held = await ctx.storage.throttle.get(tenant, key);
  await ctx.storage.throttle.clear(tenant, key);
  ctx.login.audit({ audit: 'login.unlock', tenant, user: userId, key });
  return { wasLocked: held !== undefined && held.lockedUntilMs > Date.now() };
}

/** A session's handle: the SHA-256 of its id, which is the session cookie's value and never leaves the server. */
const handleOf = (sessionId: string) => createHash('sha256').update(sessionId).digest('base64url');

interface SessionPayload {
  readonly loginTs?: number;
  readonly authorizations?: Readonly<Record<string, { readonly grantId?: string }>>;
}
interface GrantPayload {
  readonly clientId?: string;
  readonly iat?: number;
}

export async function sessionsOf(ctx: ServerContext, tenant: string, userId: string): Promise<UserSessionsView> {
  await load(ctx, tenant, userId);
  const all = await ctx.storage.grants.listByAccount(tenant, userId, ['Session', 'Grant']);
  const names = new Map<string, string>();
  const nameOf = async (clientId: string) => {
    if (!names.has(clientId)) {
      const app = await ctx.storage.applications.getByClientId(tenant, clientId);
      const edge = ctx.edge.find((e) => e.clientId === clientId);
      const shown = app === undefined ? undefined : (app.body as { displayName?: string }).displayName ?? app.name;
      names.set(clientId, shown ?? edge?.client(tenant, ctx.edgeHost)?.client_name ?? clientId);
    }
    return names.get(clientId)!;
  };
  const sessions = [];
  for (const s of all.filter((a) => a.model === 'Session')) {
    const p = s.payload as SessionPayload;
    const clients = Object.keys(p.authorizations ?? {}).sort();
    sessions.push({
      id: handleOf(s.id),
      signedInAt: p.loginTs === undefined ? null : iso(p.loginTs),
      expiresAt: s.expiresAt === null ? null : iso(s.expiresAt),
      applications: await Promise.all(clients.map(nameOf)),
    });
  }
  const byClient = new Map<string, { since: number; expiresAt: number | null }>();
  for (const g of all.filter((a) => a.model === 'Grant')) {
    const p = g.payload as GrantPayload;
    if (p.clientId === undefined) continue;
    const prev = byClient.get(p.clientId);
    const since = Math.min(prev?.since ?? Infinity, p.iat ?? Infinity);
    const exp = prev === undefined ? g.expiresAt : prev.expiresAt === null || g.expiresAt === null ? null : Math.max(prev.expiresAt, g.expiresAt);
    byClient.set(p.clientId, { since, expiresAt: exp });
  }
  const applications = [];
  for (const [clientId, g] of [...byClient].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const app = await ctx.storage.applications.getByClientId(tenant, clientId);
    applications.push({
      clientId, name: await nameOf(clientId), application: app?.name ?? null,
      since: Number.isFinite(g.since) ? iso(g.since) : null, expiresAt: g.expiresAt === null ? null : iso(g.expiresAt),
    });
  }
  return { sessions, applications };
}

/** Ends one session and every grant made in it (its applications' refresh and access tokens). */
export async function endSession(ctx: ServerContext, tenant: string, userId: string, handle: string): Promise<void> {
  await load(ctx, tenant, userId);
  const session = (await ctx.storage.grants.listByAccount(tenant, userId, ['Session'])).find((s) => handleOf(s.id) === handle);
  if (session === undefined) throw errors.notFound('this session has ended already');
  for (const a of Object.values((session.payload as SessionPayload).authorizations ?? {})) {
    if (a.grantId !== undefined) await ctx.storage.grants.revokeByGrantId(tenant, a.grantId);
  }
  await ctx.storage.grants.destroy(tenant, 'Session', session.id);
}

/** Ends every session and token of the person ("sign out everywhere"). */
export async function endAllSessions(ctx: ServerContext, tenant: string, userId: string): Promise<void> {
  await load(ctx, tenant, userId);
  await ctx.storage.grants.revokeUser(tenant, userId);
}

/** Ends the person's grants and tokens at one application: its refresh tokens stop working at once. */
export async function endApplication(ctx: ServerContext, tenant: string, userId: string, application: string): Promise<void> {
  await load(ctx, tenant, userId);
  const app = requireClientApplication(tenant, application, await ctx.storage.applications.get(tenant, application));
  await ctx.storage.grants.revokeUserClient(tenant, userId, app.body.clientId);
}
