// Server-side web app that signs users in with grant (https://github.com/simov/grant).
//
// grant.json    provider settings for grant (origin, endpoints, client id and secret, callback)
// session.env   SESSION_SECRET, the key that signs the session cookie
//
// Flow: GET /connect/<provider> redirects to the identity service; the service returns the browser
// to /connect/<provider>/callback; grant exchanges the code and redirects to the configured
// callback path (for example /hello), which answers with what grant stored in the session.
import { readFileSync } from 'node:fs';
import express from 'express';
import session from 'express-session';
import grant from 'grant';

const config = JSON.parse(readFileSync(new URL('./grant.json', import.meta.url), 'utf8'));

const secret = process.env.SESSION_SECRET;
if (!secret) {
  // A guessable session secret lets anyone forge sessions: refuse to start without one.
  console.error('SESSION_SECRET is not set: start with `npm start` (reads session.env) or export it.');
  process.exit(1);
}

const origin = new URL(config.defaults.origin);
const port = Number(process.env.PORT || origin.port || (origin.protocol === 'https:' ? 443 : 80));
const providers = Object.keys(config).filter((key) => key !== 'defaults');
const prefix = config.defaults.prefix ?? '/connect';

const app = express();
app.disable('x-powered-by');
if (process.env.TRUST_PROXY) app.set('trust proxy', process.env.TRUST_PROXY);

app.use(
  session({
    name: 'sid',
    secret,
    resave: false,
    saveUninitialized: false,
    cookie: {
      httpOnly: true,
      // Lax: the cookie must travel on the top-level GET that returns from the identity service.
      sameSite: 'lax',
      // 'auto' marks the cookie Secure whenever the request came over HTTPS (set TRUST_PROXY
      // when TLS ends at a proxy in front of this app).
      secure: 'auto',
    },
  }),
);

app.use(grant.express(config));

app.get('/', (req, res) => {
  const links = providers.map((p) => `<li><a href="${prefix}/${encodeURIComponent(p)}">Sign in with ${escapeHtml(p)}</a></li>`);
  res.type('html').send(page('Sign in', `<ul>${links.join('')}</ul>${req.session.grant?.response ? '<p><a href="/logout">Sign out</a></p>' : ''}`));
});

// One route per provider's callback path; several providers may share one path.
for (const path of new Set(providers.map((p) => config[p].callback).filter(Boolean))) {
  app.get(path, (req, res) => {
    const result = req.session.grant?.response;
    if (!result) {
      res.status(401).json({ error: 'login_required', message: `Not signed in: start at ${prefix}/${providers[0]}.` });
      return;
    }
    if (result.error) {
      // grant stores the callback's query ({error, error_description, state}) when the service
      // refused, e.g. access_denied for a user not assigned to this application; or
      // {error: {error, error_description}} when the token request failed; or {error: 'Grant: ...'}.
      const detail = typeof result.error === 'object' ? result.error : result;
      const code = /^[a-z_]+$/.test(String(detail.error)) ? String(detail.error) : 'login_failed';
      const message = detail.error_description ?? (code === 'login_failed' ? String(detail.error) : 'The identity service did not sign you in.');
      res.status(code === 'access_denied' ? 403 : 401).json({ error: code, message });
      return;
    }
    // tokens (access_token, id_token, refresh_token), raw (the token endpoint's answer) and
    // profile (the userinfo answer), as selected by `response` in grant.json.
    res.json(result);
  });
}

app.get('/logout', (req, res, next) => {
  req.session.destroy((err) => (err ? next(err) : res.redirect('/')));
});

app.listen(port, () => {
  console.log(`listening on ${origin.origin} (port ${port}); sign in at ${origin.origin}${prefix}/${providers[0]}`);
});

function page(title, body) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
