/**
 * The console's page frame and HTML helpers: server-rendered, no framework, no CDN. Every page has
 * a skip link, a header with the tenant and the signed-in administrator, a navigation landmark and
 * one main landmark whose h1 names the page; every interpolated value goes through `esc`.
 *
 * Headers: scripts and styles only from the console's own files (console.js only adds copy buttons;
 * everything works without it), forms only to the tenant's own origin, no framing.
 */
import type { Response } from 'express';
import type { EventView } from '../contract/index.ts';
import { CONSOLE_PATH } from './client.ts';

export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** A tagged template that escapes every interpolated value unless it is already `Html`. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}
type Part = string | number | Html | undefined | null | false | readonly Part[];
const render = (p: Part): string =>
  p === undefined || p === null || p === false ? '' : p instanceof Html ? p.text : Array.isArray(p) ? (p as readonly Part[]).map(render).join('') : esc(String(p));
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new Html(out);
}
export const raw = (s: string) => new Html(s);

export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  // same-origin, not no-referrer: with no-referrer browsers send `Origin: null` on form posts, and
  // the CSRF check wants the real origin. Other sites still get no referrer.
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

export type Section = 'integrations' | 'marketplace' | 'people' | 'groups' | 'activity' | 'none';

export interface Frame {
  readonly title: string;
  readonly tenantName: string;
  /** Signed-in administrator (absent on the sign-in and refusal pages). */
  readonly user?: { readonly email: string; readonly csrf: string } | undefined;
  readonly section: Section;
  readonly body: Html;
}

export function page(f: Frame): string {
  const link = (section: Section, href: string, label: string) =>
    html`<li><a href="${href}"${f.section === section ? raw(' aria-current="page"') : ''}>${label}</a></li>`;
  const nav = f.user === undefined ? '' : html`<nav aria-label="Console">
<ul>${link('integrations', `${CONSOLE_PATH}/`, 'Integrations')}${link('marketplace', `${CONSOLE_PATH}/marketplace`, 'Marketplace')}${link('people', `${CONSOLE_PATH}/people`, 'People')}${link('groups', `${CONSOLE_PATH}/groups`, 'Groups')}${link('activity', `${CONSOLE_PATH}/activity`, 'Activity')}</ul>
</nav>
<form method="post" action="${CONSOLE_PATH}/logout" class="signout">
<input type="hidden" name="csrf" value="${f.user.csrf}">
<span>Signed in as <strong>${f.user.email}</strong></span> <button type="submit" class="secondary">Sign out</button>
</form>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(f.title)} · ${esc(f.tenantName)} admin console</title>
<link rel="stylesheet" href="${CONSOLE_PATH}/static/console.css">
<script src="${CONSOLE_PATH}/static/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header><p class="brand"><span class="tenant">${esc(f.tenantName)}</span> admin console</p>
${nav}
</header>
<main id="main" tabindex="-1">
<h1>${esc(f.title)}</h1>
${f.body.text}
</main>
</body></html>`;
}

export function send(res: Response, status: number, htmlText: string): void {
  res.status(status).set(CONSOLE_HEADERS).type('html').send(htmlText);
}

/** A message that screen readers announce: errors assertively, notices politely. */
export const alert = (text: Html | string) => html`<div class="error" role="alert">${text}</div>`;
export const notice = (text: Html | string) => html`<div class="notice" role="status">${text}</div>`;

/** The owner badge the lists and pages show. */
export function ownerBadge(managedBy: string | undefined): Html {
  if (managedBy === 'idforge') return html`<span class="badge git">Managed in Git</span>`;
  if (managedBy === 'console') return html`<span class="badge console">Made in the console</span>`;
  return html`<span class="badge other">No owner</span>`;
}

/** A file to copy or download: a read-only text area (select and copy works without scripts) and a data: link. */
export function fileBlock(id: string, name: string, content: string, type = 'text/plain'): Html {
  const href = `data:${type};charset=utf-8;base64,${Buffer.from(content, 'utf8').toString('base64')}`;
  return html`<section class="file" aria-labelledby="${id}-name">
<h3 id="${id}-name"><code>${name}</code></h3>
<label class="visually-hidden" for="${id}">Contents of ${name}</label>
<textarea id="${id}" readonly rows="${Math.min(20, content.split('\n').length + 1)}" spellcheck="false">${content}</textarea>
<p class="actions"><a class="button secondary" href="${href}" download="${name}">Download ${name}</a>
<button type="button" class="secondary copy" data-copy="${id}" hidden>Copy ${name}</button></p>
</section>`;
}

export const STYLE = `:root{--fg:#1b1f24;--muted:#4a5360;--accent:#1f4fb0;--line:#c9ced6;--bg:#f4f5f7}
*{box-sizing:border-box}body{font-family:system-ui,sans-serif;color:var(--fg);background:var(--bg);margin:0;line-height:1.45}
.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5rem}.skip:focus{left:.5rem;z-index:2}
header{background:#fff;border-bottom:1px solid var(--line);padding:.5rem 1.5rem;display:flex;flex-wrap:wrap;align-items:center;gap:1rem}
.brand{margin:0;font-weight:600}.brand .tenant{color:var(--accent)}
nav ul{list-style:none;display:flex;gap:1rem;margin:0;padding:0}nav a{color:var(--fg);text-decoration:none;padding:.25rem .1rem}
nav a[aria-current]{border-bottom:3px solid var(--accent);font-weight:600}
.signout{margin-left:auto;display:flex;align-items:center;gap:.5rem}.signout button{margin:0}
main{max-width:64rem;margin:1.5rem auto;background:#fff;padding:1.5rem 2rem;border-radius:8px;box-shadow:0 1px 4px #0002}
main:focus{outline:none}h1{font-size:1.5rem;margin:0 0 1rem}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}h3{font-size:1rem;margin:1rem 0 .25rem}
a{color:var(--accent)}:focus-visible{outline:3px solid #e8a200;outline-offset:2px}
table{border-collapse:collapse;width:100%;margin:.5rem 0}caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border-bottom:1px solid var(--line);padding:.45rem .5rem;text-align:left;vertical-align:top}th{background:#eef0f3}
ul.plain{list-style:none;padding:0;margin:0}code{font-size:.95em}
label{display:block;font-weight:600;margin:.9rem 0 .2rem}input[type=text],input[type=url],input[type=search],select,textarea{width:100%;padding:.45rem;font-size:1rem;border:1px solid #767d88;border-radius:4px;font-family:inherit}
textarea{font-family:ui-monospace,monospace;font-size:.9rem}
input[aria-invalid=true],textarea[aria-invalid=true]{border:2px solid #b3261e}
.check{display:flex;gap:.5rem;align-items:center;font-weight:600;margin:.9rem 0 .2rem}.check input{width:auto}
fieldset{border:1px solid var(--line);border-radius:4px;margin:.9rem 0;padding:.5rem .9rem}legend{font-weight:600}
fieldset label{font-weight:400;display:flex;gap:.5rem;align-items:center;margin:.3rem 0}
.help{color:var(--muted);font-size:.9rem;margin:.15rem 0}.field-error{color:#b3261e;font-weight:600;font-size:.95rem;margin:.2rem 0}
button,.button{display:inline-block;margin:.75rem .5rem 0 0;padding:.5rem 1rem;font-size:1rem;background:var(--accent);color:#fff;border:1px solid var(--accent);border-radius:4px;text-decoration:none;cursor:pointer}
button.secondary,.button.secondary{background:#fff;color:var(--accent)}button.danger{background:#fff;color:#b3261e;border-color:#b3261e}
td button{margin:0}
.error{background:#fdecea;color:#7a1710;padding:.75rem;border-radius:4px;margin:.75rem 0}.error ul{margin:.25rem 0 0}
.notice{background:#e8f1fd;color:#123a7a;padding:.75rem;border-radius:4px;margin:.75rem 0}
.warning{background:#fff4d6;color:#5c4300;padding:.75rem;border-radius:4px;margin:.75rem 0}
.badge{display:inline-block;font-size:.85rem;padding:.05rem .45rem;border-radius:999px;border:1px solid}
.badge.git{color:#0b5d1e;border-color:#0b5d1e;background:#e9f6ec}.badge.console{color:#123a7a;border-color:#123a7a;background:#e8f1fd}.badge.other{color:var(--muted);border-color:var(--muted)}
.pending{color:#5c4300;font-weight:600}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(14rem,1fr));gap:1rem;list-style:none;padding:0}
.cards li{border:1px solid var(--line);border-radius:6px;padding:1rem}.cards h2{margin-top:0}
.tabs{display:flex;gap:1rem;border-bottom:1px solid var(--line);margin:0 0 1rem;padding:0;list-style:none}.tabs a{display:block;padding:.4rem .2rem;text-decoration:none;color:var(--fg)}
.tabs a[aria-current]{border-bottom:3px solid var(--accent);font-weight:600}
pre{background:#f6f8fa;border:1px solid var(--line);padding:.75rem;overflow:auto;font-size:.9rem}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem}dl.facts dt{font-weight:600}dl.facts dd{margin:0}
.search{display:flex;gap:.5rem;align-items:flex-end}.search div{flex:1}.search button{margin:0 0 .05rem}
form.inline{display:inline}`;

/** Copy buttons for file blocks; without it the text areas still select and copy by hand. */
export const SCRIPT = `'use strict';
document.querySelectorAll('button.copy[data-copy]').forEach(function (button) {
  if (!navigator.clipboard) return;
  button.hidden = false;
  button.addEventListener('click', function () {
    var area = document.getElementById(button.dataset.copy);
    navigator.clipboard.writeText(area.value).then(function () { button.textContent = 'Copied'; }, function () { area.select(); });
  });
});
`;

/** An ISO time to the minute, as the console and the account page show times (`2026-11-26 03:05 UTC`). */
export const utcMinute = (iso: string): string => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

/**
 * A person's last sign-ins (login.success events, newest first), one table for the account page
 * ("Your last …") and a person's page in the console ("Last …").
 */
export function signInsTable(signIns: readonly EventView[], caption: 'Your last' | 'Last'): Html {
  if (signIns.length === 0) return html`<p>No sign-ins recorded yet.</p>`;
  return html`<table>
<caption>${caption} ${signIns.length === 1 ? 'sign-in' : `${signIns.length} sign-ins`}</caption>
<thead><tr><th scope="col">When</th><th scope="col">To</th></tr></thead>
<tbody>${signIns.map((e) => html`<tr><td>${utcMinute(e.time)}</td><td>${typeof e.details?.client === 'string' ? e.details.client : 'this tenant'}</td></tr>`)}</tbody>
</table>`;
}
