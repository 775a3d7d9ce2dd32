// Server-side web app that signs users in with grant (https://github.com/simov/grant).
//
// grant.json    provider settings for grant (origin, endpoints, client id and secret, callback)
// session.env   SESSION_SECRET, the key that signs the session cookie
//
// Flow: GET /connect/<provider> redirects to the identity service; the service returns the browser
// to /connect/<provider>/callback; grant exchanges the code and redirects to the configured
// callback path (for example /hello), which answers with what grant stored in the session.
//
// backchannel-logout.json  the issuer, its JWKS, this client's id and the back-channel logout path
//
// Back-channel logout (OpenID Connect Back-Channel Logout 1.0): when the user signs out at the
// identity service, or loses access there (their assignment, the user or this application removed,
// the user disabled), the service POSTs a signed logout token to /backchannel-logout; the app
// verifies it and ends the sessions it names at once: within seconds of the change.
//
// Session check, besides: once half of the access token's life has passed, the next request renews
// the tokens with the refresh token; when the service refuses, the session ends there and then
// (150 s at most with the service's default 5-minute tokens, should a logout token be lost), and
// the access token in the session is always valid for calling the API.
import { readFileSync } from 'node:fs';
import express from 'express';
import session from 'express-session';
import grant from 'grant';
import { createRemoteJWKSet, jwtVerify } from 'jose';

const config = JSON.parse(readFileSync(new URL('./grant.json', import.meta.url), 'utf8'));
const backchannel = JSON.parse(readFileSync(new URL('./backchannel-logout.json', import.meta.url), 'utf8'));

const secret = process.env.SESSION_SECRET;
if (!secret) {
  // A guessable session secret lets anyone forge sessions: refuse to start without one.
  console.error('SESSION_SECRET is not set: start with `npm start` (reads session.env) or export it.');
  process.exit(1);
}

const origin = new URL(config.defaults.origin);
const port = Number(process.env.PORT || origin.port || (origin.protocol === 'https:' ? 443 : 80));
// Where to listen: HOST when set; else loopback for a local origin (localhost, *.localhost, 127.x: a
// developer's machine, where nothing else on the network should reach the app), else every interface
// (a container or host behind a load balancer or port mapping, which decides what reaches it).
const isLocal = (h) => h === 'localhost' || h.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '[::1]';
const host = process.env.HOST || (isLocal(origin.hostname) ? '127.0.0.1' : '0.0.0.0');
const providers = Object.keys(config).filter((key) => key !== 'defaults');
const prefix = config.defaults.prefix ?? '/connect';

const app = express();
app.disable('x-powered-by');
if (process.env.TRUST_PROXY) app.set('trust proxy', process.env.TRUST_PROXY);

// The session store: back-channel logout finds the sessions a logout token names in it.
const store = new session.MemoryStore();

app.use(
  session({
    name: 'sid',
    store,
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
  app.get(path, checkSession, (req, res) => {
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
    rememberWho(req, result);
    res.json(result);
  });
}

/**
 * Who this session is at the identity service, from the ID token of the code exchange (received
 * from the token endpoint over TLS, so its claims are the service's: OIDC Core §3.1.3.7): `sub` and
 * `sid`, what logout tokens name.
 */
function rememberWho(req, result) {
  if (req.session.sub !== undefined || typeof result.id_token !== 'string') return;
  try {
    const claims = JSON.parse(Buffer.from(result.id_token.split('.')[1], 'base64url').toString('utf8'));
    req.session.sub = claims.sub;
    if (typeof claims.sid === 'string') req.session.oidcSid = claims.sid;
    req.session.signedInAt = Date.now();
  } catch {
    // Not a JWT: this session cannot be named by a logout token; the refresh check still ends it.
  }
}

// ---- Back-channel logout (OpenID Connect Back-Channel Logout 1.0) --------------------------------

const EVENT = 'http://schemas.openid.net/event/backchannel-logout';
const jwks = createRemoteJWKSet(new URL(backchannel.jwks_uri));
/**
 * What logout tokens named (`sub:<sub>` or `sid:<sid>`), with when: a session of theirs signed in
 * before is over, even one a request in flight stores again after its destruction. Kept a day.
 */
const loggedOut = new Map();
const LOGGED_OUT_KEEP_MS = 24 * 3600 * 1000;
/** Token ids seen in the last few minutes (§2.6: a token is used once). */
const seen = new Map();
const TOKEN_MAX_AGE_S = 300;

class Refused extends Error {}

/** The checks of §2.6, in its order; returns the claims, or throws Refused saying which failed. */
async function verifyLogoutToken(token) {
  if (typeof token !== 'string' || token === '') throw new Refused('logout_token is missing');
  let claims;
  try {
    // Signature against the issuer's published keys (asymmetric only), iss, aud, iat, exp, typ.
    ({ payload: claims } = await jwtVerify(token, jwks, {
      issuer: backchannel.issuer,
      audience: backchannel.client_id,
      typ: 'logout+jwt',
      algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
      requiredClaims: ['iat', 'jti'],
      maxTokenAge: TOKEN_MAX_AGE_S,
      clockTolerance: 5,
    }));
  } catch (err) {
    throw new Refused(`the logout token is not valid: ${err.code ?? err.message}`);
  }
  const events = claims.events;
  if (events === null || typeof events !== 'object' || events[EVENT] === null || typeof events[EVENT] !== 'object') throw new Refused(`the logout token has no ${EVENT} event`);
  if (typeof claims.sub !== 'string' && typeof claims.sid !== 'string') throw new Refused('the logout token names neither sub nor sid');
  if ('nonce' in claims) throw new Refused('the logout token has a nonce');
  const now = Date.now();
  for (const [jti, until] of seen) if (until < now) seen.delete(jti);
  if (seen.has(claims.jti)) throw new Refused('the logout token was used before');
  seen.set(claims.jti, now + TOKEN_MAX_AGE_S * 1000);
  return claims;
}

/** Ends every stored session the claims name: the one of `sid`, else every one of `sub`. */
function endSessions(claims) {
  const named = (s) => (typeof claims.sid === 'string' ? s.oidcSid === claims.sid : s.sub === claims.sub);
  const now = Date.now();
  for (const [key, at] of loggedOut) if (at < now - LOGGED_OUT_KEEP_MS) loggedOut.delete(key);
  loggedOut.set(typeof claims.sid === 'string' ? `sid:${claims.sid}` : `sub:${claims.sub}`, now);
  return new Promise((resolve, reject) => {
    store.all((err, sessions) => {
      if (err) return reject(err);
      const ids = Object.entries(sessions ?? {}).filter(([, s]) => named(s)).map(([id]) => id);
      Promise.all(ids.map((id) => new Promise((done) => store.destroy(id, () => done())))).then(() => resolve(ids.length), reject);
    });
  });
}

if (backchannel.path) {
  app.post(backchannel.path, express.urlencoded({ extended: false, limit: '16kb' }), async (req, res) => {
    res.set('cache-control', 'no-store');
    try {
      const claims = await verifyLogoutToken(req.body?.logout_token);
      const ended = await endSessions(claims);
      console.log(`back-channel logout: ended ${ended} session(s) of ${claims.sid ? `sid ${claims.sid}` : `sub ${claims.sub}`}`);
      res.status(200).end();
    } catch (err) {
      if (!(err instanceof Refused)) {
        console.error(`back-channel logout: ${err.message}`);
        return res.status(500).json({ error: 'server_error' });
      }
      console.log(`back-channel logout refused: ${err.message}`);
      res.status(400).json({ error: 'invalid_request', error_description: err.message });
    }
  }, (err, req, res, _next) => {
    // A body the form reader refused (past 16 KiB, another charset or encoding, too many fields):
    // §2.8's 400 like any other bad request, not Express's error page (which shows the stack
    // outside production) with a 413 or 415.
    console.log(`back-channel logout refused: the request body could not be read (${err.message})`);
    const refuse = () => res.set('cache-control', 'no-store').status(400).json({ error: 'invalid_request', error_description: `the request body could not be read: ${err.message}` });
    // The form reader refuses some bodies (another charset or encoding) without reading them. Read
    // what is left, up to 8 MiB, before answering, as it does itself for a body past its limit and as
    // nginx's lingering close does: a connection closed with the body unread is reset, and the reset
    // can reach the sender before our answer does.
    if (req.complete || Number(req.headers['content-length'] ?? Infinity) > 8 * 1024 * 1024) return refuse();
    req.on('error', () => {}).once('end', refuse).resume();
  });
}

app.get('/logout', (req, res, next) => {
  req.session.destroy((err) => (err ? next(err) : res.redirect('/')));
});

/**
 * Renews the session's tokens once half of the access token's life has passed, and ends the
 * session when the identity service refuses. Runs before every route that serves signed-in users.
 */
async function checkSession(req, res, next) {
  const grantSession = req.session.grant;
  const result = grantSession?.response;
  if (!result?.access_token || result.error) return next();
  const provider = config[grantSession.provider];
  const now = Date.now();
  // A logout token for this user arrived while a request of this session was in flight (which
  // would store the session again): it ends here.
  const out = Math.max(loggedOut.get(`sub:${req.session.sub}`) ?? -1, loggedOut.get(`sid:${req.session.oidcSid}`) ?? -1);
  if (req.session.sub !== undefined && out >= (req.session.signedInAt ?? 0)) {
    return req.session.destroy(() => {
      res.status(401).json({ error: 'login_required', message: `Your session has ended: the identity service logged you out. Sign in again at ${prefix}/${grantSession.provider}.` });
    });
  }
  // When the tokens arrived (grant's callback), or were last renewed here.
  req.session.tokensAt ??= now;
  const lifetime = Number(result.raw?.expires_in) > 0 ? Number(result.raw.expires_in) * 1000 : 60_000;
  if (now - req.session.tokensAt < lifetime / 2) return next();

  const ended = (why) => {
    req.session.destroy(() => {
      res.status(401).json({ error: 'login_required', message: `Your session has ended: ${why}. Sign in again at ${prefix}/${grantSession.provider}.` });
    });
  };
  let answer;
  try {
    answer = !provider || !result.refresh_token ? undefined : await refresh(provider, result.refresh_token);
  } catch (err) {
    // The service could not be reached: keep the session while its access token is valid.
    if (now - req.session.tokensAt < lifetime) return next();
    return ended(`the identity service could not renew it (${err.message})`);
  }
  if (answer === undefined) return ended('it cannot be renewed (no refresh token)');
  if (!answer.ok) return ended(`the identity service refused to renew it (${answer.error}${answer.description ? `: ${answer.description}` : ''})`);
  Object.assign(result, {
    access_token: answer.body.access_token,
    refresh_token: answer.body.refresh_token ?? result.refresh_token,
    ...(answer.body.id_token ? { id_token: answer.body.id_token } : {}),
    raw: answer.body,
  });
  req.session.tokensAt = now;
  next();
}

/** The refresh token grant (RFC 6749 section 6), authenticated like grant's code exchange. */
async function refresh(provider, refreshToken) {
  const url = provider.access_url.replace('[subdomain]', provider.subdomain ?? '');
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(provider.key)}:${encodeURIComponent(provider.secret)}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }),
  });
  const body = await response.json().catch(() => ({}));
  if (response.ok) return { ok: true, body };
  // 4xx: the service answered no (invalid_grant: the grant was revoked); 5xx: try again later.
  if (response.status >= 500) throw new Error(`HTTP ${response.status}`);
  return { ok: false, error: String(body.error ?? `HTTP ${response.status}`), description: body.error_description };
}

// Last: anything a route or a middleware throws (grant, express-session, a store that fails) is one
// log line and a JSON answer in words, never Express's error page with the app's stack and paths.
app.use((err, req, res, _next) => {
  const status = Number.isInteger(err?.status) && err.status >= 400 && err.status < 600 ? err.status : 500;
  console.error(`${req.method} ${req.path}: ${err?.stack ?? err}`);
  if (res.headersSent) return;
  res.set('cache-control', 'no-store').status(status).json(status < 500
    ? { error: 'invalid_request', message: 'The request could not be read.' }
    : { error: 'server_error', message: 'Something went wrong on our side; try again in a moment.' });
});

app.listen(port, host, () => {
  console.log(`listening on ${origin.origin} (${host}:${port}); sign in at ${origin.origin}${prefix}/${providers[0]}`);
});

function page(title, body) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
