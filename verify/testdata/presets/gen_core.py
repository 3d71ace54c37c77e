#!/usr/bin/env python3
"""Writes the test vectors of the core presets (verify/presets.yaml) into
this directory: python3 gen_core.py (from anywhere).

Published vectors (GitHub, Slack, Standard Webhooks, Twilio) are written
from the provider's own example, and the script recomputes each with
hmac/hashlib and stops if it does not match. The others are computed here
with hmac/hashlib, and with `cryptography` (deterministic ECDSA, RFC 6979)
for ed25519 and ecdsa. The private keys below are test data: only the
public keys go into the vectors.
"""
import base64
import hashlib
import hmac
import json
import os

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

import vectorfile

HERE = os.path.dirname(os.path.abspath(__file__))
NOW = 1700000000


def write(name, **kw):
    vectorfile.write(name, script="gen_core.py", **kw)


def mac(alg, key, msg):
    return hmac.new(key if isinstance(key, bytes) else key.encode(), msg.encode(), alg).digest()


def b64(b):
    return base64.b64encode(b).decode()


# GitHub: the example of "Validating webhook deliveries".
gh_secret, gh_body = "It's a Secret to Everybody", "Hello, World!"
gh_sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
assert "sha256=" + mac(hashlib.sha256, gh_secret, gh_body).hex() == gh_sig
write("github", origin="published",
      follows="https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation",
      secret=gh_secret, now=NOW, url="https://hooks.example.com/in/github",
      headers={"X-Hub-Signature-256": gh_sig, "X-GitHub-Event": "push",
               "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
      body=gh_body, event_type="push",
      negative=[{"name": "sha1 prefix", "headers": {"X-Hub-Signature-256": gh_sig.replace("sha256=", "sha1=")}, "err": "malformed"},
                {"name": "no signature", "headers": {"X-Hub-Signature-256": ""}, "err": "missing"},
                {"name": "another secret", "headers": {"X-Hub-Signature-256": "sha256=" + mac(hashlib.sha256, "other", gh_body).hex()}, "err": "mismatch"}])

# Slack: the worked example of "Verifying requests from Slack".
sl_secret, sl_ts = "8f742231b10e8888abcd99yyyzzz85a5", "1531420618"
sl_body = ("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
           "&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
           "&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
           "&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
sl_sig = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
assert "v0=" + mac(hashlib.sha256, sl_secret, f"v0:{sl_ts}:{sl_body}").hex() == sl_sig
write("slack", origin="published", follows="https://api.slack.com/authentication/verifying-requests-from-slack",
      secret=sl_secret, now=int(sl_ts), url="https://hooks.example.com/in/slack",
      headers={"X-Slack-Signature": sl_sig, "X-Slack-Request-Timestamp": sl_ts,
               "Content-Type": "application/x-www-form-urlencoded"},
      body=sl_body,
      negative=[{"name": "no timestamp", "headers": {"X-Slack-Request-Timestamp": ""}, "err": "missing"},
                {"name": "timestamp changed", "headers": {"X-Slack-Request-Timestamp": str(int(sl_ts) + 1)}, "err": "mismatch"},
                {"name": "v1 prefix", "headers": {"X-Slack-Signature": sl_sig.replace("v0=", "v1=")}, "err": "malformed"}])

# Standard Webhooks: the vector of the reference libraries' tests.
sw_secret, sw_id, sw_ts, sw_body = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", '{"test": 2432232314}'
sw_sig = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
assert "v1," + b64(mac(hashlib.sha256, base64.b64decode(sw_secret[6:]), f"{sw_id}.{sw_ts}.{sw_body}")) == sw_sig
write("standardwebhooks", origin="published",
      follows="https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/python/tests/test_webhooks.py#L153",
      secret=sw_secret, now=int(sw_ts), url="https://hooks.example.com/in/sw",
      headers={"webhook-id": sw_id, "webhook-timestamp": sw_ts, "webhook-signature": "v1,Zm9v " + sw_sig},
      body=sw_body,
      negative=[{"name": "no id", "headers": {"webhook-id": ""}, "err": "missing"},
                {"name": "id changed", "headers": {"webhook-id": sw_id + "x"}, "err": "mismatch"},
                {"name": "only other versions", "headers": {"webhook-signature": sw_sig.replace("v1,", "v2,")}, "err": "mismatch"}])

# Svix: the same scheme under svix-* headers.
sv_secret = "whsec_" + b64(b"svix-test-signing-secret-32bytes")
sv_id, sv_body = "msg_2bGYw1RdXnBRTmWdYoqXvcsSeXA", '{"type":"invoice.paid","data":{"id":"in_1"}}'
sv_sig = "v1," + b64(mac(hashlib.sha256, base64.b64decode(sv_secret[6:]), f"{sv_id}.{NOW}.{sv_body}"))
write("svix", origin="python", follows="https://docs.svix.com/receiving/verifying-payloads/how-manual",
      secret=sv_secret, now=NOW, url="https://hooks.example.com/in/svix",
      headers={"svix-id": sv_id, "svix-timestamp": str(NOW), "svix-signature": sv_sig},
      body=sv_body,
      negative=[{"name": "webhook-* headers are not svix-*", "headers": {"svix-signature": "", "webhook-signature": sv_sig}, "err": "missing"}])

# Twilio: the example of "Webhooks security" (auth token 12345).
tw_url = "https://mycompany.com/myapp.php?foo=1&bar=2"
tw_params = [("CallSid", "CA1234567890ABCDE"), ("Caller", "+14158675310"), ("Digits", "1234"),
             ("From", "+14158675310"), ("To", "+18005551212")]
tw_sig = "GvWf1cFY/Q7PnoempGyD5oXAezc="
assert b64(mac(hashlib.sha1, "12345", tw_url + "".join(k + v for k, v in sorted(tw_params)))) == tw_sig
from urllib.parse import urlencode
write("twilio", origin="published", follows="https://www.twilio.com/docs/usage/webhooks/webhooks-security",
      secret="12345", now=NOW, url=tw_url,
      headers={"X-Twilio-Signature": tw_sig, "Content-Type": "application/x-www-form-urlencoded"},
      body=urlencode(tw_params),
      negative=[{"name": "param added", "body": urlencode(tw_params + [("Extra", "1")]), "err": "mismatch"},
                {"name": "not base64", "headers": {"X-Twilio-Signature": "***"}, "err": "malformed"}])

# Stripe: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the whole whsec_ string>.
st_secret = "whsec_test_5f6c2a0e8d4b4f7e9a1c3b5d7f9e1a3c"
st_body = '{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","type":"payment_intent.succeeded"}'
st_v1 = mac(hashlib.sha256, st_secret, f"{NOW}.{st_body}").hex()
write("stripe", origin="python", follows="https://docs.stripe.com/webhooks#verify-manually",
      secret=st_secret, now=NOW, url="https://hooks.example.com/in/stripe",
      headers={"Stripe-Signature": f"t={NOW},v1={mac(hashlib.sha256, 'whsec_rolled', f'{NOW}.{st_body}').hex()},v1={st_v1},v0=00"},
      body=st_body, event_type="payment_intent.succeeded",
      negative=[{"name": "no timestamp", "headers": {"Stripe-Signature": f"v1={st_v1}"}, "err": "malformed"},
                {"name": "timestamp changed", "headers": {"Stripe-Signature": f"t={NOW + 1},v1={st_v1}"}, "err": "mismatch"},
                {"name": "only v0", "headers": {"Stripe-Signature": f"t={NOW},v0={st_v1}"}, "err": "mismatch"}])

# Shopify: base64 HMAC-SHA256 of the body under the app's client secret.
sh_secret, sh_body = "shpss_0123456789abcdef0123456789abcdef", '{"id":820982911946154508,"email":"jon@example.com"}'
write("shopify", origin="python", follows="https://shopify.dev/docs/apps/build/webhooks/subscribe/https",
      secret=sh_secret, now=NOW, url="https://hooks.example.com/in/shopify",
      headers={"X-Shopify-Hmac-Sha256": b64(mac(hashlib.sha256, sh_secret, sh_body)), "X-Shopify-Topic": "orders/create",
               "X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"},
      body=sh_body, event_type="orders/create",
      negative=[{"name": "hex, not base64", "headers": {"X-Shopify-Hmac-Sha256": mac(hashlib.sha256, sh_secret, sh_body).hex()}, "err": "mismatch"}])

# Square: base64 HMAC-SHA256 of the notification URL followed by the body.
sq_secret, sq_url = "sq0wss-test-signature-key", "https://hooks.example.com/in/square?src=sq"
sq_body = '{"merchant_id":"6SSW7HV8K2ST5","type":"payment.created","event_id":"13b867cf-db3d-4b1c-90b6-2f32a9d78124"}'
write("square", origin="python", follows="https://developer.squareup.com/docs/webhooks/step3validate",
      secret=sq_secret, verify={"url": sq_url}, now=NOW, url="https://internal.example.net/in/square?src=sq",
      headers={"X-Square-Hmacsha256-Signature": b64(mac(hashlib.sha256, sq_secret, sq_url + sq_body))},
      body=sq_body, event_type="payment.created",
      negative=[{"name": "signed over the body alone", "headers": {"X-Square-Hmacsha256-Signature": b64(mac(hashlib.sha256, sq_secret, sq_body))}, "err": "mismatch"}])

# HubSpot v3: base64 HMAC-SHA256 of method + URL + body + timestamp (ms).
hs_secret, hs_url, hs_ms = "hs-client-secret-0000-1111", "https://hooks.example.com/in/hubspot?portal=62515", str(NOW * 1000)
hs_body = '[{"eventId":100,"subscriptionId":1234,"portalId":62515,"subscriptionType":"contact.creation","objectId":123}]'
write("hubspot", origin="python", follows="https://developers.hubspot.com/docs/apps/legacy-apps/authentication/validating-requests#validate-the-v3-request-signature",
      secret=hs_secret, now=NOW, url=hs_url,
      headers={"X-HubSpot-Signature-v3": b64(mac(hashlib.sha256, hs_secret, "POST" + hs_url + hs_body + hs_ms)),
               "X-HubSpot-Request-Timestamp": hs_ms},
      body=hs_body, event_type="contact.creation",
      negative=[{"name": "timestamp in seconds", "headers": {"X-HubSpot-Request-Timestamp": str(NOW)}, "err": "expired"}])

# Ed25519: a fixed test key.
ed = ed25519.Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"ankusa ed25519 test key").digest())
ed_pub = ed.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

dc_body = '{"type":1,"id":"1234","application_id":"5678","token":"tok","version":1}'
dc_sig = ed.sign((str(NOW) + dc_body).encode()).hex()
write("discord", origin="python",
      follows="https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers",
      secret=ed_pub.hex(), now=NOW, url="https://hooks.example.com/in/discord",
      headers={"X-Signature-Ed25519": dc_sig, "X-Signature-Timestamp": str(NOW)},
      body=dc_body, event_type="1",
      negative=[{"name": "timestamp changed", "headers": {"X-Signature-Timestamp": str(NOW + 1)}, "err": "mismatch"},
                {"name": "signature truncated", "headers": {"X-Signature-Ed25519": dc_sig[:64]}, "err": "malformed"}])

tx_body = '{"data":{"event_type":"message.received","id":"0ccc7b54-4df3-4bca-a65a-3da1ecc777f0","payload":{"text":"hi"}}}'
write("telnyx", origin="python", follows="https://developers.telnyx.com/api-reference/callbacks/number-order-status-update",
      secret=b64(ed_pub), now=NOW, url="https://hooks.example.com/in/telnyx",
      headers={"telnyx-signature-ed25519": b64(ed.sign(f"{NOW}|{tx_body}".encode())), "telnyx-timestamp": str(NOW)},
      body=tx_body, event_type="message.received",
      negative=[{"name": "signed without the bar", "headers": {"telnyx-signature-ed25519": b64(ed.sign(f"{NOW}{tx_body}".encode()))}, "err": "mismatch"}])

# SendGrid: ECDSA P-256 over SHA-256 of timestamp + body, DER, base64.
ecd = ec.derive_private_key(int.from_bytes(hashlib.sha256(b"ankusa ecdsa test key").digest(), "big"), ec.SECP256R1())
ec_pub = b64(ecd.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))
sg_body = '[{"email":"example@test.com","timestamp":1700000000,"event":"delivered","sg_event_id":"sg_1"}]\r\n'
sg_sig = b64(ecd.sign(f"{NOW}{sg_body}".encode(), ec.ECDSA(hashes.SHA256(), deterministic_signing=True)))
write("sendgrid", origin="python",
      follows="https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features",
      secret=ec_pub, now=NOW, url="https://hooks.example.com/in/sendgrid",
      headers={"X-Twilio-Email-Event-Webhook-Signature": sg_sig, "X-Twilio-Email-Event-Webhook-Timestamp": str(NOW)},
      body=sg_body, event_type="delivered",
      negative=[{"name": "no timestamp", "headers": {"X-Twilio-Email-Event-Webhook-Timestamp": ""}, "err": "missing"}])

# Postmark: basic authentication in the webhook URL.
write("postmark", origin="python", follows="https://postmarkapp.com/developer/webhooks/webhooks-overview",
      secret="postmark:s3cret-Pa55", now=NOW, url="https://hooks.example.com/in/postmark",
      headers={"Authorization": "Basic " + b64(b"postmark:s3cret-Pa55")},
      body='{"RecordType":"Delivery","MessageID":"883953f4-6105-42a2-a16a-77a8eac79483"}', event_type="Delivery",
      negative=[{"name": "bearer", "headers": {"Authorization": "Bearer postmark:s3cret-Pa55"}, "err": "malformed"},
                {"name": "no authorization", "headers": {"Authorization": ""}, "err": "missing"}])

# GitLab: the secret token as is.
write("gitlab", origin="python", follows="https://docs.gitlab.com/user/project/integrations/webhooks/",
      secret="glwt-0123456789", now=NOW, url="https://hooks.example.com/in/gitlab",
      headers={"X-Gitlab-Token": "glwt-0123456789", "X-Gitlab-Event": "Push Hook",
               "Idempotency-Key": "f7a9d3b2-2e44-4a8b-9a25-1d9b5d5b6f0a"},
      body='{"object_kind":"push","ref":"refs/heads/main"}', event_type="Push Hook",
      negative=[{"name": "token prefix", "headers": {"X-Gitlab-Token": "glwt-012345678"}, "err": "mismatch"}])

# Mailgun: hex HMAC-SHA256 of timestamp + token, in the body's signature object.
mg_key, mg_token = "key-mailgun-signing-0123456789ab", "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0"
mg_sig = mac(hashlib.sha256, mg_key, str(NOW) + mg_token).hex()
mg_body = json.dumps({"signature": {"timestamp": str(NOW), "token": mg_token, "signature": mg_sig},
                      "event-data": {"event": "delivered", "id": "CPgfbmQMTCKtHW6uIWtuVe"}}, separators=(",", ":"))
write("mailgun", origin="python",
      follows="https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks",
      secret=mg_key, now=NOW, url="https://hooks.example.com/in/mailgun",
      headers={"Content-Type": "application/json"}, body=mg_body, event_type="delivered",
      negative=[{"name": "token changed", "body": mg_body.replace(mg_token, mg_token[:-1] + "f"), "err": "mismatch"},
                {"name": "signature object duplicated", "body": mg_body[:-1] + ',"signature":{"timestamp":"1","token":"x","signature":"00"}}', "err": "malformed"},
                {"name": "not JSON", "body": "signature=" + mg_sig, "err": "malformed"}])

# Adyen: base64 HMAC-SHA256 (key hex) of the item's fields joined by ":".
ad_key = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
ad_item = {"pspReference": "7914073381342284", "originalReference": "", "merchantAccountCode": "TestMerchant",
           "merchantReference": "TestPayment-1407325143704", "amount": {"value": 1130, "currency": "EUR"},
           "eventCode": "AUTHORISATION", "success": "true"}
ad_signed = ":".join([ad_item["pspReference"], ad_item["originalReference"], ad_item["merchantAccountCode"],
                      ad_item["merchantReference"], str(ad_item["amount"]["value"]), ad_item["amount"]["currency"],
                      ad_item["eventCode"], ad_item["success"]])
ad_item["additionalData"] = {"hmacSignature": b64(mac(hashlib.sha256, bytes.fromhex(ad_key), ad_signed))}
ad_body = json.dumps({"live": "false", "notificationItems": [{"NotificationRequestItem": ad_item}]}, separators=(",", ":"))
write("adyen", origin="python", follows="https://docs.adyen.com/development-resources/webhooks/verify-hmac-signatures",
      secret=ad_key, now=NOW, url="https://hooks.example.com/in/adyen",
      headers={"Content-Type": "application/json"}, body=ad_body, event_type="AUTHORISATION",
      negative=[{"name": "amount changed", "body": ad_body.replace("1130", "1131"), "err": "mismatch"},
                # A parser that keeps the last of duplicate keys would read
                # 1 where the signature vouches for 1130.
                {"name": "amount duplicated", "body": ad_body.replace('"value":1130', '"value":1130,"value":1'), "err": "malformed"},
                # The signature covers its own item: a second, unsigned
                # one must not ride along.
                {"name": "unsigned second item", "body": ad_body.replace(']}', ',{"NotificationRequestItem":{"pspReference":"EVIL","amount":{"value":99999999,"currency":"EUR"},"eventCode":"REFUND","success":"true"}}]}'), "err": "malformed"}])
