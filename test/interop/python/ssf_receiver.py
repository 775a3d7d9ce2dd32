"""An OpenID Shared Signals Framework receiver, written from the specifications alone and sharing no
code with idforge's transmitter (test/events/ssf.test.ts runs it):

- SSF 1.0 §7 discovery: GET <origin>/.well-known/ssf-configuration, its `issuer` and `jwks_uri`;
- SSF 1.0 §8.1.1 a stream: POST to `configuration_endpoint` with poll delivery (RFC 8936);
- SSF 1.0 §8.1.4 verification: POST to `verification_endpoint`, then the verification SET arrives;
- RFC 8936 §2 polling: POST `{maxEvents, returnImmediately, ack}` to the stream's endpoint_url;
- RFC 8417 SETs verified with joserfc (Authlib's JOSE library, installed with Authlib into the
  interop venv: Authlib requires it) against the transmitter's JWKS: the signature,
  `typ: secevent+jwt`, `iss` the discovery's issuer, `aud` the stream's.

Environment: SSF_ORIGIN (the tenant's origin), SSF_TOKEN (a bearer that may make streams),
SSF_AUDIENCE (the `aud` asked for), SSF_WANT (an event type URI), SSF_SUB (the subject's `sub`).
Prints one JSON line per step: {"ready": stream_id} once verified, then {"set": claims, "header": ...}
for each SET of SSF_WANT about SSF_SUB, and exits 0 after the first; exits 1 on anything wrong.
"""
import json
import os
import sys
import time

import requests
from joserfc import jwt
from joserfc.jwk import KeySet

ORIGIN = os.environ["SSF_ORIGIN"]
TOKEN = os.environ["SSF_TOKEN"]
AUDIENCE = os.environ["SSF_AUDIENCE"]
WANT = os.environ["SSF_WANT"]
SUB = os.environ["SSF_SUB"]
POLL = "urn:ietf:rfc:8936"
VERIFICATION = "https://schemas.openid.net/secevent/ssf/event-type/verification"


def say(obj):
    print(json.dumps(obj), flush=True)


def fail(why):
    say({"error": why})
    sys.exit(1)


config = requests.get(f"{ORIGIN}/.well-known/ssf-configuration", timeout=10)
if config.status_code != 200:
    fail(f"discovery answered {config.status_code}")
config = config.json()
if POLL not in config.get("delivery_methods_supported", []):
    fail("the transmitter does not offer poll delivery")
issuer = config["issuer"]
keys = KeySet.import_key_set(requests.get(config["jwks_uri"], timeout=10).json())

made = requests.post(
    config["configuration_endpoint"],
    headers={"Authorization": f"Bearer {TOKEN}"},
    json={"delivery": {"method": POLL}, "events_requested": [WANT], "aud": AUDIENCE, "description": "spec-written receiver"},
    timeout=10,
)
if made.status_code not in (200, 201):
    fail(f"creating a stream answered {made.status_code}: {made.text}")
stream = made.json()
if stream.get("iss") != issuer or stream.get("aud") != AUDIENCE or stream["delivery"]["method"] != POLL:
    fail(f"the stream is not what was asked for: {stream}")
poll_url = stream["delivery"]["endpoint_url"]
# The stream's own credential if the transmitter made one, else the token that made it.
auth = {"Authorization": f"Bearer {stream.get('receiver_token', TOKEN)}"}


def verified(token):
    decoded = jwt.decode(token, keys)
    header, claims = decoded.header, decoded.claims
    if header.get("typ") != "secevent+jwt":
        fail(f"a SET's typ is {header.get('typ')!r}")
    if claims.get("iss") != issuer:
        fail(f"a SET's iss is {claims.get('iss')!r}, not {issuer!r}")
    aud = claims.get("aud")
    if aud != AUDIENCE and not (isinstance(aud, list) and AUDIENCE in aud):
        fail(f"a SET's aud is {aud!r}")
    if not isinstance(claims.get("events"), dict) or len(claims["events"]) != 1:
        fail("a SET must carry exactly one event")
    return header, claims


state = f"state-{time.time()}"
v = requests.post(config["verification_endpoint"], headers=auth, json={"stream_id": stream["stream_id"], "state": state}, timeout=10)
if v.status_code != 204:
    fail(f"verification answered {v.status_code}: {v.text}")

ack = []
ready = False
deadline = time.time() + 120
while time.time() < deadline:
    r = requests.post(poll_url, headers=auth, json={"maxEvents": 10, "returnImmediately": False, "ack": ack}, timeout=60)
    if r.status_code != 200:
        fail(f"poll answered {r.status_code}: {r.text}")
    body = r.json()
    ack = []
    for jti, token in body.get("sets", {}).items():
        header, claims = verified(token)
        if claims.get("jti") != jti:
            fail("a SET's jti is not its key in the poll answer")
        ack.append(jti)
        events = claims["events"]
        if VERIFICATION in events:
            if events[VERIFICATION].get("state") != state:
                fail("the verification SET does not echo our state")
            ready = True
            say({"ready": stream["stream_id"]})
            continue
        subject = claims.get("sub_id", {})
        user = subject.get("user", subject) if subject.get("format") == "complex" else subject
        if WANT in events and user.get("format") == "iss_sub" and user.get("sub") == SUB:
            if not ready:
                fail("an event arrived before the verification")
            requests.post(poll_url, headers=auth, json={"maxEvents": 0, "returnImmediately": True, "ack": ack}, timeout=10)
            say({"set": claims, "header": header})
            sys.exit(0)
fail("no event arrived in time")
