/** Email and password: identifies the user. argon2id (see _crypto.ts). */
import { verifyPassword } from '../_crypto.ts';
import { escapeHtml } from './pages.ts';
import { INVALID_CREDENTIALS, normalizeEmail, type LoginFactor } from './types.ts';

export const passwordFactor: LoginFactor = {
  id: 'password',
  label: 'Password',
  identifies: true,
  multiFactor: false,
  accountOf: (form) => normalizeEmail(form.email) || undefined,
  renderFields: async (ctx, previous) => `
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required autofocus value="${escapeHtml(previous.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
<p class="detail"><a href="/interaction/${encodeURIComponent(ctx.uid)}/forgot">Forgot password?</a></p>`,
  async verify(ctx, form) {
    const email = (form.email ?? '').trim();
    const password = form.password ?? '';
    const user = email === '' ? undefined : await ctx.storage.users.getByEmail(ctx.tenant, email);
    // Unknown users, disabled users and wrong passwords cost the same argon2 verification and get
    // the same answer, so neither timing nor wording tells which accounts exist.
    const ok = await verifyPassword(user?.passwordHash ?? undefined, password);
    if (!ok || user === undefined || user.body.disabled) {
      return { ok: false, message: INVALID_CREDENTIALS, reason: user === undefined ? 'unknown account' : ok ? 'disabled' : 'wrong password' };
    }
    return { ok: true, user };
  },
};
