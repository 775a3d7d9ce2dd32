"""A relying party and an API at Authlib's defaults, for test/interop/authlib-defaults.test.ts: the
client calls the API with the user's access token the way an Authlib application does
(`oauth.<name>.get(url, token=...)`), so Authlib decides itself whether the token is still good to
send. It refreshes a token that expires within its 60 s leeway (OAuth2Session.ensure_active_token,
`leeway=60`) before sending it, and hands the new one to update_token. With access tokens shorter
than that leeway every token looks expired on arrival; with the server's default it is sent as is.

The API is Authlib's own resource server: ResourceProtector with its RFC 9068 validator, against
the tenant's JWKS.

Environment: IDFORGE_ISSUER, IDFORGE_CLIENT_ID, IDFORGE_CLIENT_SECRET, IDFORGE_SCOPES,
IDFORGE_API_AUDIENCE. Prints "listening http://127.0.0.1:<port>" once it serves.
"""

import os
import secrets
import sys
import time

import requests
from authlib.integrations.flask_client import OAuth
from authlib.integrations.flask_oauth2 import ResourceProtector, current_token
from authlib.oauth2.rfc9068 import JWTBearerTokenValidator
from flask import Flask, jsonify, url_for
from werkzeug.serving import make_server

ISSUER = os.environ["IDFORGE_ISSUER"]
DISCOVERY = ISSUER.rstrip("/") + "/.well-known/openid-configuration"
AUDIENCE = os.environ["IDFORGE_API_AUDIENCE"]

app = Flask(__name__)
app.secret_key = secrets.token_bytes(32)
# What Authlib handed to update_token: the tokens it refreshed on its own.
REFRESHED = []


def update_token(name, token, refresh_token=None, access_token=None):
    REFRESHED.append(dict(token))


oauth = OAuth(app, update_token=update_token)
oauth.register(
    "idforge",
    client_id=os.environ["IDFORGE_CLIENT_ID"],
    client_secret=os.environ["IDFORGE_CLIENT_SECRET"],
    server_metadata_url=DISCOVERY,
    client_kwargs={"scope": os.environ["IDFORGE_SCOPES"]},
)


class Validator(JWTBearerTokenValidator):
    def __init__(self):
        super().__init__(issuer=ISSUER, resource_server=AUDIENCE)
        self._jwks = None

    def get_jwks(self):
        if self._jwks is None:
            metadata = requests.get(DISCOVERY, timeout=10).json()
            self._jwks = requests.get(metadata["jwks_uri"], timeout=10).json()
        return self._jwks


require_oauth = ResourceProtector()
require_oauth.register_token_validator(Validator())


@app.get("/api/whoami")
@require_oauth()
def whoami():
    return jsonify(sub=current_token["sub"], jti=current_token.get("jti"))


@app.get("/login")
def login():
    return oauth.idforge.authorize_redirect(url_for("callback", _external=True))


def call_api(token):
    """The API through Authlib's client: Authlib refreshes first if it judges the token expired."""
    before = len(REFRESHED)
    res = oauth.idforge.get(url_for("whoami", _external=True), token=token)
    return {
        "status": res.status_code,
        "body": res.json() if res.headers.get("content-type", "").startswith("application/json") else res.text,
        "sent": res.request.headers.get("Authorization", "").removeprefix("Bearer "),
        "refreshedByAuthlib": len(REFRESHED) - before,
    }


@app.get("/callback")
def callback():
    step = "token"
    try:
        token = oauth.idforge.authorize_access_token()
        step = "fresh token"
        fresh = call_api(token)
        # The same token once most of its life has passed: Authlib refreshes it, as it would then.
        step = "aged token"
        aged_token = dict(token, expires_at=int(time.time()) + 30)
        aged = call_api(aged_token)
    except Exception as err:  # the step and the library's own words, for the test to show
        return jsonify(step=step, error=f"{type(err).__name__}: {err}"), 502
    return jsonify(
        accessToken=token["access_token"],
        fresh=fresh,
        aged=aged,
        refreshedAccessToken=REFRESHED[-1]["access_token"] if REFRESHED else None,
        refreshedRefreshToken=REFRESHED[-1].get("refresh_token") if REFRESHED else None,
        refreshToken=token.get("refresh_token"),
    )


if __name__ == "__main__":
    # Threaded: the client calls the API on this same server.
    server = make_server("127.0.0.1", 0, app, threaded=True)
    print(f"listening http://127.0.0.1:{server.server_port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
