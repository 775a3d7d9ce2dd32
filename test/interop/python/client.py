"""A relying party built as Authlib's Flask client documentation builds one, at Authlib's defaults:
discovery (server_metadata_url), the code flow with state and a nonce (Authlib adds PKCE only when
told a code_challenge_method), ID token validation, userinfo, refresh, client_credentials, and a
resource server's check of the access token with Authlib's RFC 9068 validator (joserfc underneath).
test/interop/matrix.test.ts drives it over HTTP.

Environment: IDFORGE_ISSUER, IDFORGE_CLIENT_ID, IDFORGE_CLIENT_SECRET, IDFORGE_SCOPES,
IDFORGE_API_AUDIENCE; for client_credentials IDFORGE_SYSTEM_ISSUER, IDFORGE_SYSTEM_CLIENT_ID,
IDFORGE_SYSTEM_CLIENT_SECRET, IDFORGE_ADMIN_AUDIENCE, IDFORGE_ADMIN_URL. Prints
"listening http://127.0.0.1:<port>" once it serves.
"""

import os
import secrets
import sys
from importlib.metadata import version

import requests
from authlib.integrations.flask_client import OAuth
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc9068 import JWTBearerTokenValidator
from flask import Flask, jsonify, url_for
from werkzeug.serving import make_server

ISSUER = os.environ["IDFORGE_ISSUER"]
DISCOVERY = ISSUER.rstrip("/") + "/.well-known/openid-configuration"

app = Flask(__name__)
app.secret_key = secrets.token_bytes(32)
# Authlib refreshes a token on its own before using it when it expires within its 60 s leeway and
# hands the new one to update_token, where an application stores it (it does so while the server's
# access tokens live less than 60 s). Kept here, and counted for the test to show.
AUTO_REFRESHES = []


def update_token(name, token, refresh_token=None, access_token=None):
    AUTO_REFRESHES.append(token)


oauth = OAuth(app, update_token=update_token)
oauth.register(
    "idforge",
    client_id=os.environ["IDFORGE_CLIENT_ID"],
    client_secret=os.environ["IDFORGE_CLIENT_SECRET"],
    server_metadata_url=DISCOVERY,
    client_kwargs={"scope": os.environ["IDFORGE_SCOPES"]},
)


class ResourceServer(JWTBearerTokenValidator):
    """An API that accepts the issuer's JWT access tokens for its own audience (RFC 9068)."""

    def __init__(self, issuer, audience):
        super().__init__(issuer=issuer, resource_server=audience)
        metadata = requests.get(issuer.rstrip("/") + "/.well-known/openid-configuration", timeout=10).json()
        self.jwks = requests.get(metadata["jwks_uri"], timeout=10).json()

    def get_jwks(self):
        return self.jwks

    def check(self, token_string):
        claims = self.authenticate_token(token_string)
        self.validate_token(claims, None, None)
        return dict(claims)


def versions():
    return {name: version(name) for name in ("authlib", "joserfc", "flask", "requests")}


@app.get("/login")
def login():
    return oauth.idforge.authorize_redirect(url_for("callback", _external=True))


@app.get("/callback")
def callback():
    step = "token"
    try:
        # Exchanges the code and validates the ID token (signature, iss, aud, exp, nonce).
        token = oauth.idforge.authorize_access_token()
        step = "userinfo"
        userinfo = oauth.idforge.userinfo(token=token)
        step = "access_token"
        api = ResourceServer(ISSUER, os.environ["IDFORGE_API_AUDIENCE"])
        access = api.check(token["access_token"])
        step = "refresh"
        metadata = oauth.idforge.load_server_metadata()
        current = AUTO_REFRESHES[-1] if AUTO_REFRESHES else token
        session = OAuth2Session(
            os.environ["IDFORGE_CLIENT_ID"], os.environ["IDFORGE_CLIENT_SECRET"],
            scope=os.environ["IDFORGE_SCOPES"], token=current,
        )
        refreshed = session.refresh_token(metadata["token_endpoint"])
        step = "refreshed_access_token"
        refreshed_access = api.check(refreshed["access_token"])
    except Exception as err:  # the step and the library's own words, for the test to show
        return jsonify(step=step, error=f"{type(err).__name__}: {err}"), 502
    return jsonify(
        versions=versions(),
        idToken=dict(token["userinfo"]),
        userinfo=dict(userinfo),
        accessToken=access,
        refreshed=refreshed_access,
        refreshTokenNew=refreshed.get("refresh_token") not in (None, current.get("refresh_token")),
        autoRefreshes=len(AUTO_REFRESHES),
    )


@app.get("/client-credentials")
def client_credentials():
    step = "token"
    try:
        system = os.environ["IDFORGE_SYSTEM_ISSUER"]
        metadata = requests.get(system.rstrip("/") + "/.well-known/openid-configuration", timeout=10).json()
        session = OAuth2Session(os.environ["IDFORGE_SYSTEM_CLIENT_ID"], os.environ["IDFORGE_SYSTEM_CLIENT_SECRET"], scope="admin")
        token = session.fetch_token(metadata["token_endpoint"], grant_type="client_credentials", resource=os.environ["IDFORGE_ADMIN_AUDIENCE"])
        step = "access_token"
        access = ResourceServer(system, os.environ["IDFORGE_ADMIN_AUDIENCE"]).check(token["access_token"])
        step = "admin_api"
        status = session.get(os.environ["IDFORGE_ADMIN_URL"] + "/tenants", timeout=10).status_code
    except Exception as err:
        return jsonify(step=step, error=f"{type(err).__name__}: {err}"), 502
    return jsonify(accessToken=access, adminApiStatus=status)


if __name__ == "__main__":
    server = make_server("127.0.0.1", 0, app)
    print(f"listening http://127.0.0.1:{server.server_port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
