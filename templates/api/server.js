// HTTP API (resource server) that accepts only access tokens of one tenant, verified offline with
// jose (https://github.com/panva/jose) against the tenant's published keys.
//
// api-config.json  issuer, jwks_uri, audience, origin, public_routes, routes (path + scopes),
//                  ssf_configuration_url (the tenant's Shared Signals transmitter)
// api.env          CORS_ORIGINS: browser origins (single-page apps) allowed to call this API
// environment      SSF_RECEIVER_TOKEN: the receiver token of this API's SSF stream (optional; see README)
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

// Revocation pushed by the tenant (OpenID Shared Signals, CAEP session-revoked): a subject whose
// access was removed is refused at once, not when its token expires. Kept in memory: after a
// restart, tokens issued before an event the API missed are refused again as soon as the stream's
// unacknowledged events arrive (the transmitter holds them until acknowledged); one received before
// a restart is forgotten, and such a token is taken again until it expires (minutes).
const revoked = createRevocations();
if (process.env.SSF_RECEIVER_TOKEN && config.ssf_configuration_url) {
  receiveSignals(process.env.SSF_RECEIVER_TOKEN).catch((err) => console.error(`shared signals stopped: ${err.message}`));
}

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
    if (revoked.refuses(payload)) {
      challenge(res, 401, { error: 'invalid_token', error_description: 'the session was revoked' }, 'The access token is invalid.');
      return;
    }
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

const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
const ACCOUNT_DISABLED = 'https://schemas.openid.net/secevent/risc/event-type/account-disabled';
const ACCOUNT_PURGED = 'https://schemas.openid.net/secevent/risc/event-type/account-purged';
const POLL = 'urn:ietf:rfc:8936';

/**
 * Subjects and clients whose sessions were revoked, with when (Unix seconds): a token issued at or
 * before that moment is refused; one issued later (the person signed in again, or was assigned
 * again) is taken. Entries outlive every token they could refuse (a day), then go.
 */
function createRevocations() {
  const subjects = new Map();
  const clients = new Map();
  const DAY = 86_400;
  const note = (map, key, at) => {
    if (typeof key !== 'string' || !Number.isFinite(at)) return;
    map.set(key, Math.max(map.get(key) ?? 0, at));
  };
  setInterval(() => {
    const old = Date.now() / 1000 - DAY;
    for (const map of [subjects, clients]) for (const [k, at] of map) if (at < old) map.delete(k);
  }, 3_600_000).unref();
  return {
    /** RFC 8417 SET claims: session-revoked (and account-disabled or -purged) about a subject of this issuer. */
    take(claims) {
      // A SET that verified may still be odd inside (a broken transmitter): what is not an object
      // is no event and no subject. Never a throw here: the receiver would stop at this SET and
      // read none after it again (it is never acknowledged, so it comes first every time).
      const object = (v) => (v !== null && typeof v === 'object' ? v : {});
      const events = object(claims.events);
      const type = [SESSION_REVOKED, ACCOUNT_DISABLED, ACCOUNT_PURGED].find((t) => Object.hasOwn(events, t));
      if (type === undefined) return;
      const at = Number(object(events[type]).event_timestamp ?? claims.iat);
      // RFC 9493 subject identifiers: the person as iss_sub (alone or as the `user` of a complex
      // subject), an application as the opaque client id its tokens carry as `client_id`.
      const subject = object(claims.sub_id);
      const user = subject.format === 'complex' ? subject.user : subject;
      if (user?.format === 'iss_sub' && user.iss === config.issuer) note(subjects, user.sub, at);
      const application = subject.format === 'complex' ? subject.application : undefined;
      if (application?.format === 'opaque') note(clients, application.id, at);
    },
    refuses(payload) {
      const iat = Number(payload.iat ?? 0);
      const bySubject = subjects.get(payload.sub);
      const byClient = clients.get(payload.client_id);
      return (bySubject !== undefined && iat <= bySubject) || (byClient !== undefined && iat <= byClient);
    },
  };
}

/**
 * The API as an SSF receiver by poll (RFC 8936), which works behind NAT: discovery, the stream this
 * receiver token opens, then long polls that acknowledge what the previous one brought. Each SET is
 * verified like a token (the tenant's keys, `typ: secevent+jwt`, `iss`, and the stream's `aud`).
 */
async function receiveSignals(token) {
  const auth = { authorization: `Bearer ${token}` };
  const getJson = async (url, init = {}) => {
    const res = await fetch(url, { ...init, headers: { ...auth, 'content-type': 'application/json', ...init.headers }, signal: AbortSignal.timeout(60_000) });
    if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: HTTP ${res.status} ${await res.text()}`);
    return res.json();
  };
  let wait = 1;
  for (;;) {
    try {
      const discovery = await getJson(config.ssf_configuration_url);
      if (discovery.issuer !== config.issuer) throw new Error(`the transmitter's issuer is ${discovery.issuer}, not ${config.issuer}`);
      const [stream] = await getJson(discovery.configuration_endpoint);
      if (stream?.delivery?.method !== POLL) throw new Error('the receiver token opens no poll stream');
      console.log(`receiving shared signals of ${config.issuer} (stream ${stream.stream_id})`);
      let ack = [];
      let setErrs = {};
      for (;;) {
        const body = JSON.stringify({ ack, setErrs, returnImmediately: false, maxEvents: 100 });
        const { sets = {} } = await getJson(stream.delivery.endpoint_url, { method: 'POST', body });
        ack = [];
        setErrs = {};
        for (const [jti, set] of Object.entries(sets)) {
          try {
            const { payload } = await jwtVerify(set, keys, { issuer: config.issuer, audience: stream.aud, typ: 'secevent+jwt', algorithms: ['RS256', 'ES256'] });
            revoked.take(payload);
            ack.push(jti);
          } catch (err) {
            // The keys could not be fetched: not the SET's fault; it comes again (unacknowledged).
            if (err?.code === 'ERR_JWKS_TIMEOUT' || err instanceof TypeError) throw err;
            // Told back to the transmitter (RFC 8936 section 2.4), which stops sending that SET.
            console.error(`a security event did not verify (${err.code ?? err.message}); refused`);
            setErrs[jti] = { err: setError(err), description: describe(err) };
          }
        }
        wait = 1;
      }
    } catch (err) {
      console.error(`shared signals: ${err.message}; retrying in ${wait} s`);
      await new Promise((r) => setTimeout(r, wait * 1000));
      wait = Math.min(wait * 2, 30);
    }
  }
}

/** RFC 8935 section 2.4's error codes for a SET that did not verify. */
function setError(err) {
  if (err?.code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' || err?.code === 'ERR_JWKS_NO_MATCHING_KEY') return 'invalid_key';
  if (err?.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && err.claim === 'iss') return 'invalid_issuer';
  if (err?.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && err.claim === 'aud') return 'invalid_audience';
  return 'invalid_request';
}
