#!/usr/bin/env python3
"""Writes the test vectors of the jws and rsa presets (Plaid, Netlify,
PayPal) into this directory: python3 gen_jws.py (from anywhere).

Each is computed here with `cryptography`: ES256 (deterministic ECDSA, RFC
6979, its DER turned into JWS's raw r||s), HS256 with hmac/hashlib, and
RSA-SHA256 PKCS#1 v1.5 (deterministic) under a self-signed test
certificate with fixed dates and serial, so that a rerun writes the same
files. The private keys below are test data: only public keys and the
certificate go into the vectors.
"""
import base64
import datetime
import hashlib
import hmac
import json
import os
import zlib

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

import vectorfile

HERE = os.path.dirname(os.path.abspath(__file__))
NOW = 1700000000


def write(name, **kw):
    vectorfile.write(name, script="gen_jws.py", **kw)




def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def seg(obj):
    return b64url(json.dumps(obj, separators=(",", ":")).encode())


def es256(key, header, claims):
    signing = seg(header) + "." + seg(claims)
    der = key.sign(signing.encode(), ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
    r, s = decode_dss_signature(der)
    return signing + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def hs256(secret, header, claims):
    signing = seg(header) + "." + seg(claims)
    return signing + "." + b64url(hmac.new(secret, signing.encode(), hashlib.sha256).digest())


def hs256raw(secret, header, claims_json):
    signing = seg(header) + "." + b64url(claims_json.encode())
    return signing + "." + b64url(hmac.new(secret, signing.encode(), hashlib.sha256).digest())


def unsigned(header, claims):
    return seg(header) + "." + seg(claims) + "."


def sha256hex(s):
    return hashlib.sha256(s.encode()).hexdigest()


# Plaid: an ES256 JWT in Plaid-Verification; claims iat and
# request_body_sha256; the key is the JWK /webhook_verification_key/get
# returns for the token's kid.
pl_key = ec.derive_private_key(int.from_bytes(hashlib.sha256(b"ankusa plaid test key").digest(), "big"), ec.SECP256R1())
pl_old = ec.derive_private_key(int.from_bytes(hashlib.sha256(b"ankusa plaid old key").digest(), "big"), ec.SECP256R1())
pl_pub = pl_key.public_key().public_numbers()
pl_kid = "6c5516e1-92dc-479e-a8ff-5a51992e0001"
pl_answer = json.dumps({"key": {"alg": "ES256", "created_at": 1560466150, "crv": "P-256", "expired_at": None,
                                "kid": pl_kid, "kty": "EC", "use": "sig",
                                "x": b64url(pl_pub.x.to_bytes(32, "big")), "y": b64url(pl_pub.y.to_bytes(32, "big"))},
                        "request_id": "RZ6Omi1bzzwDaLo"}, separators=(",", ":"))
pl_old_pem = pl_old.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
pl_body = '{\n  "environment": "sandbox",\n  "error": null,\n  "item_id": "wz666MBjYWTp2PDzzggYhM6oWWmBb",\n  "webhook_code": "DEFAULT_UPDATE",\n  "webhook_type": "TRANSACTIONS"\n}'
pl_hdr = {"alg": "ES256", "kid": pl_kid, "typ": "JWT"}
pl_claims = {"iat": NOW - 5, "request_body_sha256": sha256hex(pl_body)}
pl_raw_pub = pl_key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
write("plaid", origin="python", follows="https://plaid.com/docs/api/webhooks/webhook-verification/",
      secrets=[pl_old_pem, pl_answer], now=NOW, url="https://hooks.example.com/in/plaid",
      headers={"Plaid-Verification": es256(pl_key, pl_hdr, pl_claims), "Content-Type": "application/json"},
      body=pl_body, event_type="DEFAULT_UPDATE",
      negative=[{"name": "iat six minutes old", "headers": {"Plaid-Verification": es256(pl_key, pl_hdr, {**pl_claims, "iat": NOW - 360})}, "err": "expired"},
                {"name": "HS256 under the public key", "headers": {"Plaid-Verification": hs256(pl_raw_pub, {**pl_hdr, "alg": "HS256"}, pl_claims)}, "err": "malformed"},
                {"name": "alg none", "headers": {"Plaid-Verification": unsigned({**pl_hdr, "alg": "none"}, pl_claims)}, "err": "malformed"},
                {"name": "alg twice", "headers": {"Plaid-Verification": b64url(b'{"alg":"ES256","alg":"none"}') + es256(pl_key, pl_hdr, pl_claims)[len(seg(pl_hdr)):]}, "err": "malformed"},
                {"name": "claims signed by another key", "headers": {"Plaid-Verification": es256(ec.derive_private_key(7, ec.SECP256R1()), pl_hdr, pl_claims)}, "err": "mismatch"},
                {"name": "no iat", "headers": {"Plaid-Verification": es256(pl_key, pl_hdr, {"request_body_sha256": pl_claims["request_body_sha256"]})}, "err": "missing"},
                {"name": "no token", "headers": {"Plaid-Verification": ""}, "err": "missing"}])

# Netlify: an HS256 JWS in X-Webhook-Signature under the hook's JWS secret
# token; claims iss (netlify) and sha256 (hex of the body).
nl_secret = "netlify-jws-secret-token-0123456789"
nl_body = json.dumps({"id": "5ebc34bf4fea0b01f02efa3a", "site_id": "fa4dd95a-994e-4f89-8a7a-2d9e9fc36a32",
                      "build_id": "5ebc34bf4fea0b01f02efa38", "state": "ready", "name": "www-example",
                      "branch": "main", "context": "production"}, separators=(",", ":"))
nl_hdr = {"alg": "HS256", "typ": "JWT"}
nl_claims = {"iss": "netlify", "sha256": sha256hex(nl_body)}
write("netlify", origin="python", follows="https://docs.netlify.com/site-deploys/notifications/#payload-signature",
      secret=nl_secret, now=NOW, url="https://hooks.example.com/in/netlify",
      headers={"X-Webhook-Signature": hs256(nl_secret.encode(), nl_hdr, nl_claims), "Content-Type": "application/json"},
      body=nl_body, event_type="ready",
      negative=[{"name": "another issuer", "headers": {"X-Webhook-Signature": hs256(nl_secret.encode(), nl_hdr, {**nl_claims, "iss": "other"})}, "err": "mismatch"},
                {"name": "another secret", "headers": {"X-Webhook-Signature": hs256(b"other", nl_hdr, nl_claims)}, "err": "mismatch"},
                {"name": "alg none", "headers": {"X-Webhook-Signature": unsigned({"alg": "none", "typ": "JWT"}, nl_claims)}, "err": "malformed"},
                {"name": "ES256 header", "headers": {"X-Webhook-Signature": es256(pl_key, {"alg": "ES256"}, nl_claims)}, "err": "malformed"},
                {"name": "crit extension", "headers": {"X-Webhook-Signature": hs256(nl_secret.encode(), {**nl_hdr, "crit": ["b64"], "b64": False}, nl_claims)}, "err": "malformed"},
                # A parser that keeps the last of duplicate members would read
                # another hash than the first one.
                {"name": "sha256 claim twice", "headers": {"X-Webhook-Signature": hs256raw(nl_secret.encode(), nl_hdr, '{"iss":"netlify","sha256":"%s","sha256":"00"}' % nl_claims["sha256"])}, "err": "malformed"},
                {"name": "four segments", "headers": {"X-Webhook-Signature": hs256(nl_secret.encode(), nl_hdr, nl_claims) + ".x"}, "err": "malformed"}])

# PayPal: base64 RSA-SHA256 (PKCS#1 v1.5) over
# "<transmission id>|<transmission time>|<webhook id>|<crc32 of the body>"
# under the certificate at PAYPAL-CERT-URL.
PP_KEY = b"""-----BEGIN PRIVATE KEY-----
MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQC0Bnl0CHMRm3r3
SAC4DQ1Ega7+1L2LcwKqik6YjxaF9KiAkIrITJ3kyY2uWW6jg0PJoeBgrY8bz3jI
F7LaYlu1sdiE4602MTb7ZCxS8irwDr0O7/+Lt7hiDwbRUuRqbYAWl+qEmKCcS0j7
KY2dnv/IuVkojOxXVf/4bW6ck4KaUyj9BEJ3ugkLzDiTUYSzTsy2TWtSwRgF/TkB
6IrvnOf1a6tLXUOntoorXXTgMIelsjN3GtmJcRQ7beYYlgCuVndhGj3ieceR0hT2
YcrQzBcA9SHubbIHACdQQ+kgFHZHaYM53prm+Q+GEpaZYllwc7fTx8ImIRmjS5AC
Y0FWevWNAgMBAAECggEAJuKCH9vGXQ6AHkMFcrvQ+pPnZGA3y9PtBsCmjuHTS95n
ehOegnq4HSei7H6hPPzYqsgGEuPSNj/XVyL1TSHzLLkMK1IRQxQYy+6ce1MXDrCk
SgJxaHCnyTh1MMgOkeVyhg7Mx1S/VlsVmbilP99M4QKV/UIJN6kaB8M9YeEj0+jX
Q0iOZ3z3RY8EgXvLN82y39DkVNC8ZOBBvMEhfTPziXS68+AOG9stinLQd0bnyTye
HqyMBj4QaypgsYOCcOAzbIQLsJxXB2l24V4KLc9TNOUeAVqV4faH/jeiKJMGZuWU
g8GdPYWtOUk5Q//5l586H3qqANzNhssGqtCSGdb+yQKBgQDXBky/H83FvbYkwcH7
8ATwtVcckpeG1y4Lx5lzoPYGFCFnLUDHJpGjFiMqjWe4LKvlzBVIxnpJMIkix5Ml
S2ynKn101f8IbeX8Rv96pg5RDekjt7eCPhnUkDRATNZYBd1LEm6akW8hGTLDNHrk
5upk3fZl2diTLva6NEfIvsgv2QKBgQDWVMcZOQAuzkcV1urVtxsGu5JPpF6o1LNO
bkXPLPPT4TjTQTVrsSYbbkmdLjTOOOvW20OCqyLVx9XZrOdsb3T35DFZuyzpsEtg
5SaY4zZg7gbtOCSqTnk6qWPSlB2ESSux3tEXuC/Vlj01cuygL+BqKdiocBgbHKuU
DFKjsbKW1QKBgDOIu/4Whj+9PxlCItbZ6KU0IQOlEpHrooqKNPnkevJsArFyxBK2
6LK4jIcXSuN2OWCi7/r4Lri53DQsttR6ZjkOUvEclLoVdMhoz7Q6djXw6o536pBZ
h+FNCmjawYhpJ2dlrIJ5FrRNEMB+JHIV8dlo5TP16RUlbValTwsKxnnJAoGAdpZf
ttfv/vXJJQ9NzcPLI1WDJae3bEiLkTi4TWH84t25mEF7MkPI5uKFvn8DXprl+nJF
DzZrRseTziW5wiiFGmda2uASgJY3jrwbN/p3avgoQvaOauCSeN+iSLAFCN2HXJoB
LNOPO+ktorYcsKDs1TCkHMYwwEeDs52B1+qI+qUCgYA40qHk4dM3mgui8gpmNOBY
P8r1wKYJRJlNPrFMGK/zsf0q0+5UuFJYXoiMMH99bo1ZPwlJmyJRCdafDBbVsVW8
RmkIoB5y9cc6eHF70bhUeEBk1bHyjU0RpJmmy9KxpKXUAo0cfWn5Vm78WoZHePMI
LDFQ38oF+6DEMp0VBs5+lQ==
-----END PRIVATE KEY-----
"""
pp_key = serialization.load_pem_private_key(PP_KEY, password=None)
pp_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "messageverificationcerts.test.example")])
pp_cert = (x509.CertificateBuilder().subject_name(pp_name).issuer_name(pp_name)
           .public_key(pp_key.public_key()).serial_number(1)
           .not_valid_before(datetime.datetime(2023, 1, 1, tzinfo=datetime.timezone.utc))
           .not_valid_after(datetime.datetime(2033, 1, 1, tzinfo=datetime.timezone.utc))
           .sign(pp_key, hashes.SHA256()))
pp_pem = pp_cert.public_bytes(serialization.Encoding.PEM).decode()
pp_wid = "1JE4291016473214C"
pp_tid = "69cd13f0-d67a-11e5-baa3-778b53f4ae55"
pp_time = datetime.datetime.fromtimestamp(NOW - 2, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
pp_body = json.dumps({"id": "WH-0H7523483N6571012-1HP64470DH397094D", "event_version": "1.0",
                      "create_time": pp_time, "resource_type": "capture", "event_type": "PAYMENT.CAPTURE.COMPLETED",
                      "summary": "Payment completed for $ 7.47 USD",
                      "resource": {"id": "42311647XV020574X", "status": "COMPLETED",
                                   "amount": {"currency_code": "USD", "value": "7.47"}}}, separators=(",", ":"))


def pp_sig(tid, tm, wid, body):
    msg = f"{tid}|{tm}|{wid}|{zlib.crc32(body.encode())}"
    return base64.b64encode(pp_key.sign(msg.encode(), padding.PKCS1v15(), hashes.SHA256())).decode()


write("paypal", origin="python", follows="https://developer.paypal.com/api/rest/webhooks/rest/",
      secret=pp_pem, verify={"webhook_id": pp_wid}, now=NOW, url="https://hooks.example.com/in/paypal",
      headers={"PAYPAL-TRANSMISSION-ID": pp_tid, "PAYPAL-TRANSMISSION-TIME": pp_time,
               "PAYPAL-TRANSMISSION-SIG": pp_sig(pp_tid, pp_time, pp_wid, pp_body),
               "PAYPAL-CERT-URL": "https://api-m.sandbox.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-1d93a270",
               "PAYPAL-AUTH-ALGO": "SHA256withRSA", "Content-Type": "application/json"},
      body=pp_body, event_type="PAYMENT.CAPTURE.COMPLETED",
      negative=[{"name": "another webhook id", "headers": {"PAYPAL-TRANSMISSION-SIG": pp_sig(pp_tid, pp_time, "0XX00000000000000", pp_body)}, "err": "mismatch"},
                {"name": "transmission id changed", "headers": {"PAYPAL-TRANSMISSION-ID": pp_tid[:-1] + "6"}, "err": "mismatch"},
                {"name": "transmission time changed", "headers": {"PAYPAL-TRANSMISSION-TIME": pp_time.replace("Z", "+00:00")}, "err": "mismatch"},
                {"name": "SHA1withRSA", "headers": {"PAYPAL-AUTH-ALGO": "SHA1withRSA"}, "err": "malformed"},
                {"name": "no auth algo", "headers": {"PAYPAL-AUTH-ALGO": ""}, "err": "missing"},
                {"name": "no transmission time", "headers": {"PAYPAL-TRANSMISSION-TIME": ""}, "err": "missing"},
                {"name": "signature not base64", "headers": {"PAYPAL-TRANSMISSION-SIG": "***"}, "err": "malformed"}])
