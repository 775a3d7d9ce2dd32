// HTTP API (resource server) that accepts only access tokens of one tenant, verified offline with
// jose (https://github.com/panva/jose) against the tenant's published keys.
//
// api-config.json  issuer, jwks_uri, audience, origin, public_routes, routes (path + scopes)
// api.env          CORS_ORIGINS: browser origins (single-page apps) allowed to call this API
import { readFileSync } from 'node:fs';
import express from 'express';
import { createRemoteJWKSet, jwtVerify } from 'jose';

const config = JSON.parse(readFileSync(new URL('./api-config.json', import.meta.url), 'utf8'));

// createRemoteJWKSet caches the key set and refetches only when a token names an unknown key
// (rotation), at most once per cooldown, so verification stays offline in the steady state.
const keys = createRemoteJWKSet(new URL(config.jwks_uri));

const REALM = config.audience;
const INSUFFICIENT = (scopes) =>
  `Insufficient privileges: this route needs the ${scopes.join(' and ')} scope${scopes.length > 1 ? 's' : ''}.`;

const corsOrigins = new Set(
  (process.env.CORS_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean),
);

const listenOn = config.origin ? new URL(config.origin) : undefined;
const port = Number(process.env.PORT || listenOn?.port || 8000);
// Where to listen: HOST when set; else loopback for a local origin (localhost, *.localhost, 127.x: a
// developer's machine, where nothing else on the network should reach the app), else every interface
// (a container or host behind a load balancer or port mapping, which decides what reaches it).
const isLocal = (h) => h === 'localhost' || h.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '[::1]';
const host = process.env.HOST || (listenOn === undefined || isLocal(listenOn.hostname) ? '127.0.0.1' : '0.0.0.0');

const app = express();
app.disable('x-powered-by');
app.use(cors);

// What each route answers once it is allowed; routes in the config without a handler here answer
// with the caller's identity, so adding a route to the config is enough to protect it.
const handlers = {
  '/': (_req, res) => res.json({ message: 'Public route: no token needed.', protected_routes: config.routes.map((r) => r.path) }),
  '/whoami': (req, res) => res.json(req.auth.claims),
  '/admin': (req, res) => res.json({ message: `Hello ${req.auth.claims.sub}, you hold the admin scope.`, sub: req.auth.claims.sub, scp: req.auth.scopes }),
};
const fallback = (req, res) => res.json({ path: req.path, sub: req.auth.claims.sub, scp: req.auth.scopes });

for (const path of config.public_routes ?? []) {
  app.get(path, handlers[path] ?? ((req, res) => res.json({ path: req.path })));
}
for (const route of config.routes ?? []) {
  app.get(route.path, authenticate, requireScopes(route.scopes ?? []), handlers[route.path] ?? fallback);
}

app.use((_req, res) => res.status(404).json({ message: 'Not found.' }));

app.listen(port, host, () => console.log(`listening on ${host}:${port}; accepting tokens of ${config.issuer} for ${config.audience}`));

/** RFC 6750: the token travels in the Authorization header as `Bearer <token>`. */
async function authenticate(req, res, next) {
  const header = req.get('authorization');
  if (!header || !/^Bearer(?: |$)/i.test(header)) {
    // No credentials, or another scheme's (Basic, ...): either way the request holds no Bearer
    // token, so the challenge carries no error code (RFC 6750 section 3.1), and it is not a 400.
    challenge(res, 401, {}, 'An access token is required: send Authorization: Bearer <token>.');
    return;
  }
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  if (!match) {
    challenge(res, 400, { error: 'invalid_request', error_description: 'malformed Authorization header' }, 'The Authorization header must be: Bearer <token>.');
    return;
  }
  try {
    const { payload } = await jwtVerify(match[1], keys, {
      issuer: config.issuer,
      audience: config.audience,
      // RFC 9068: an access token says so in its header; this keeps ID tokens out.
      typ: 'at+jwt',
      // RFC 8725 section 3.1: accept only the algorithms the tenant's keys use, never what the
      // token's header asks for (no HMAC with a public key as the secret, no 'none').
      algorithms: ['RS256', 'ES256'],
      clockTolerance: 5,
    });
    req.auth = { claims: payload, scopes: scopesOf(payload) };
    next();
  } catch (err) {
    if (err?.code === 'ERR_JWKS_TIMEOUT' || err instanceof TypeError) {
      // The keys could not be fetched: our problem, not the caller's token.
      console.error(`cannot fetch ${config.jwks_uri}: ${err.message}`);
      res.status(503).set('Retry-After', '5').json({ message: 'The token cannot be checked right now; try again shortly.' });
      return;
    }
    challenge(res, 401, { error: 'invalid_token', error_description: describe(err) }, 'The access token is invalid.');
  }
}

function requireScopes(needed) {
  return (req, res, next) => {
    const missing = needed.filter((s) => !req.auth.scopes.includes(s));
    if (missing.length === 0) {
      next();
      return;
    }
    challenge(res, 403, { error: 'insufficient_scope', scope: needed.join(' ') }, INSUFFICIENT(needed));
  };
}

/** `scp` is an array of granted scopes; tolerate the space-separated `scope` string of RFC 9068. */
function scopesOf(claims) {
  if (Array.isArray(claims.scp)) return claims.scp.filter((s) => typeof s === 'string');
  if (typeof claims.scope === 'string') return claims.scope.split(' ').filter(Boolean);
  return [];
}

function challenge(res, status, params, message) {
  const attrs = Object.entries({ realm: REALM, ...params }).map(([k, v]) => `${k}="${String(v).replace(/["\\]/g, '')}"`);
  res.set('WWW-Authenticate', `Bearer ${attrs.join(', ')}`).status(status).json({ message });
}

function describe(err) {
  switch (err?.code) {
    case 'ERR_JWT_EXPIRED':
      return 'the token has expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      return `the token's ${err.claim} claim is not accepted here`;
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return 'the token is not signed by this tenant';
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'the token is signed with an algorithm this API does not accept';
    default:
      return 'the token could not be verified';
  }
}

/** Bearer tokens travel in a header, not a cookie, so CORS only needs to name the allowed origins. */
function cors(req, res, next) {
  res.vary('Origin');
  const origin = req.get('origin');
  if (origin && corsOrigins.has(origin)) {
    res.set('Access-Control-Allow-Origin', origin);
    res.set('Access-Control-Expose-Headers', 'WWW-Authenticate');
    if (req.method === 'OPTIONS' && req.get('access-control-request-method')) {
      res.set('Access-Control-Allow-Methods', 'GET, POST, PUT, PATCH, DELETE');
      res.set('Access-Control-Allow-Headers', 'Authorization, Content-Type');
      res.set('Access-Control-Max-Age', '600');
      res.status(204).end();
      return;
    }
  }
  next();
}
