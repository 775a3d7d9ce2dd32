/**
 * Server-rendered pages of the tenant's sign-in flow. Plain HTML forms: no JavaScript needed,
 * except for passkeys (the browser's WebAuthn API has no form equivalent). Every interpolated
 * value goes through escapeHtml.
 */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const STYLE = `body{font-family:system-ui,sans-serif;background:#f4f5f7;margin:0}
main{max-width:24rem;margin:4rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002}
h1{font-size:1.25rem;margin:0 0 .25rem}.tenant{color:#555;margin:0 0 1.5rem}
label{display:block;margin:.75rem 0 .25rem}input{width:100%;box-sizing:border-box;padding:.5rem;font-size:1rem}
button{margin-top:1.25rem;width:100%;padding:.6rem;font-size:1rem;background:#2553b8;color:#fff;border:0;border-radius:4px}
.error{background:#fdecea;color:#8a1c12;padding:.6rem;border-radius:4px}.detail{color:#555;font-size:.9rem}
.notice{background:#e8f1fd;color:#123a7a;padding:.6rem;border-radius:4px}
h2{font-size:1rem;margin:1.5rem 0 .25rem}section+section{border-top:1px solid #ddd;margin-top:1.5rem}
button.secondary{background:#fff;color:#2553b8;border:1px solid #2553b8}img{display:block;margin:.5rem auto}
code{word-break:break-all;font-size:1rem}`;

export interface PageParts {
  readonly title: string;
  readonly tenantName: string;
  /** Already-escaped HTML. */
  readonly body: string;
}

export function renderPage(p: PageParts): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(p.title)} · ${escapeHtml(p.tenantName)}</title><style>${STYLE}</style></head>
<body><main><h1>${escapeHtml(p.title)}</h1><p class="tenant">${escapeHtml(p.tenantName)}</p>
${p.body}
</main></body></html>`;
}

/**
 * Security headers for our pages: scripts only from our own files (the passkey helper; no inline
 * script, so injected markup cannot run), images only inline (the TOTP QR code is a data: URL),
 * no framing (clickjacking on the login form). No form-action restriction: after the POST the
 * browser is redirected on to the client's origin.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'none'; script-src 'self'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** Every page the server renders: the security headers, and never cached (forms carry CSRF tokens). */
export const PAGE_HEADERS: Readonly<Record<string, string>> = { ...SECURITY_HEADERS, 'cache-control': 'no-store' };
