/**
 * Every message the server mails, as pure functions of what it says: a plain-text part and an HTML
 * part that say the same, each naming the tenant the person has an account with (so a message of
 * one tenant never reads as another's). The secret (a code, a link) comes first in the text, on a
 * line of its own, so previews show it and no wrapping splits it.
 */
import { escapeHtml } from './pages.ts';

export interface MailContent {
  readonly subject: string;
  readonly text: string;
  readonly html: string;
}

/** "10 minutes", "45 seconds", "7 days": how long something lasts, in words. */
export function duration(seconds: number): string {
  if (seconds >= 2 * 86_400) return `${Math.round(seconds / 86_400)} days`;
  if (seconds >= 2 * 3600) return `${Math.round(seconds / 3600)} hours`;
  return seconds >= 120 ? `${Math.round(seconds / 60)} minutes` : `${Math.round(seconds)} seconds`;
}

/** Paragraphs as HTML, each escaped, and the message's one action as a button with its address spelled out. */
function html(tenant: string, paragraphs: readonly string[], action?: { readonly href: string; readonly label: string }): string {
  const body = paragraphs.map((p) => `<p style="margin:0 0 1em">${escapeHtml(p)}</p>`).join('\n');
  const button = action === undefined ? '' : `<p style="margin:1.5em 0"><a href="${escapeHtml(action.href)}" style="background:#2553b8;color:#fff;padding:.6em 1.2em;border-radius:4px;text-decoration:none">${escapeHtml(action.label)}</a></p>
<p style="margin:0 0 1em;color:#555;font-size:.9em">Or open this address: <span style="word-break:break-all">${escapeHtml(action.href)}</span></p>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(tenant)}</title></head>
<body style="font-family:system-ui,sans-serif;color:#222;max-width:36em;margin:1em auto">
<p style="color:#555;margin:0 0 1.5em">${escapeHtml(tenant)}</p>
${button === '' ? body : `${body}\n${button}`}
</body></html>`;
}

/** An emailed sign-in code (factor-otp.ts). */
export function signInCodeMail(tenant: string, code: string, lifetimeSeconds: number): MailContent {
  const lines = [
    `Enter it to sign in to ${tenant}. It works once and expires in ${duration(lifetimeSeconds)}.`,
    'If you did not try to sign in, ignore this message; nobody can sign in without the code.',
  ];
  return {
    subject: `Your sign-in code for ${tenant}`,
    text: `Your sign-in code is ${code}\n\n${lines.join('\n')}\n`,
    html: html(tenant, [`Your sign-in code is ${code}`, ...lines]),
  };
}

/** A link that sets a password: `recovery` (forgotten password) or `invitation` (a new account). */
export function passwordLinkMail(kind: 'recovery' | 'invitation', tenant: string, email: string, url: string, lifetimeSeconds: number): MailContent {
  const expires = duration(lifetimeSeconds);
  if (kind === 'invitation') {
    const lines = [
      `You have been invited to ${tenant}, with the account ${email}.`,
      `Open the link to choose your password. It works once and expires in ${expires}.`,
      'If you did not expect this invitation, ignore this message.',
    ];
    return {
      subject: `You are invited to ${tenant}`,
      text: `Choose your password: ${url}\n\n${lines.join('\n')}\n`,
      html: html(tenant, lines, { href: url, label: 'Choose your password' }),
    };
  }
  const lines = [
    `Someone asked to reset the password of ${email} at ${tenant}.`,
    `Open the link to choose a new password. It works once and expires in ${expires}. You will still be asked for your second step, if your account has one, when you sign in.`,
    'If it was not you, ignore this message: your password stays as it is.',
  ];
  return {
    subject: `Reset your password for ${tenant}`,
    text: `Reset your password: ${url}\n\n${lines.join('\n')}\n`,
    html: html(tenant, lines, { href: url, label: 'Choose a new password' }),
  };
}
