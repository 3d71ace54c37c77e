#!/usr/bin/env python3
"""Writes the test vectors of the group b presets (verify/presets.d/b.yaml).

None of these providers publishes a worked example with its secret, so every
vector is computed here, with the standard library only, from the scheme its
documentation gives (the address is each vector's `follows`). Run it from any
directory; it rewrites <name>.yaml next to itself:

    python3 verify/testdata/presets/gen_b.py

The secrets are made up. The signed timestamp is T; every check runs at
T + 10 s.
"""

import base64
import hashlib
import hmac
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

T = 1764950400  # 2025-12-05T16:00:00Z, the signed timestamp
NOW = T + 10
T_MS = T * 1000 + 123  # the same instant for the millisecond schemes


def mac(alg, key, msg):
    if isinstance(key, str):
        key = key.encode()
    if isinstance(msg, str):
        msg = msg.encode()
    return hmac.new(key, msg, getattr(hashlib, alg)).digest()


def b64(raw):
    return base64.b64encode(raw).decode()


def q(s):
    """A YAML double-quoted scalar (JSON string syntax is valid YAML)."""
    return json.dumps(s, ensure_ascii=False)


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


WRONG = "not-the-configured-secret"


# --- Standard Webhooks -------------------------------------------------------

def std_sig(key, msg_id, ts, body):
    return "v1," + b64(mac("sha256", key, f"{msg_id}.{ts}.{body}"))


def whsec_key(secret):
    return base64.b64decode(secret.removeprefix("whsec_"))


def standard(name, follows, prefix, secret, key, msg_id, body, event_type, extra=None):
    h_id, h_ts, h_sig = prefix + "-id", prefix + "-timestamp", prefix + "-signature"
    headers = {h_id: msg_id, h_ts: str(T), h_sig: std_sig(key, msg_id, T, body)}
    headers.update(extra or {})
    other = b"another key entirely, 32 bytes!!"
    return {
        "name": name,
        "follows": follows,
        "secret": secret,
        "headers": headers,
        "body": body,
        "event_type": event_type,
        "negative": [
            neg("signature header missing", without(headers, h_sig), "missing"),
            neg("signed with another secret", ({h_sig: std_sig(other, msg_id, T, body)}), "mismatch"),
            neg("timestamp replaced after signing", ({h_ts: str(T + 1)}), "mismatch"),
            neg("id replaced after signing", ({h_id: msg_id + "x"}), "mismatch"),
        ],
    }


def neg(name, headers, err):
    """A negative: headers are applied over the vector's, "" removing one."""
    return {"name": name, "headers": headers, "err": err}


def without(headers, name):
    return {name: ""}


VECTORS = []

# Clerk (Svix headers).
clerk_secret = "whsec_Y2xlcmstdGVzdC1zaWduaW5nLXNlY3JldC0wMDE="
VECTORS.append(standard(
    "clerk", "https://clerk.com/docs/reference/backend/verify-webhook", "svix",
    clerk_secret, whsec_key(clerk_secret), "msg_2q5YRbFv0KeWBcvj1yQnRZ3zL8h",
    compact({"data": {"id": "user_2q5YQa6t0xJvNqPzF3bHcLmA9kE", "object": "user",
                      "first_name": "Ada", "last_name": "Lovelace",
                      "email_addresses": [{"email_address": "ada@example.com", "id": "idn_2q5YQc1"}],
                      "created_at": T * 1000},
             "instance_id": "ins_2q5Y0aBcD", "object": "event", "timestamp": T * 1000,
             "type": "user.created"}),
    "user.created"))

# Resend (Svix headers).
resend_secret = "whsec_cmVzZW5kLXRlc3Qtc2lnbmluZy1zZWNyZXQtMDAy"
VECTORS.append(standard(
    "resend", "https://resend.com/docs/webhooks/verify-webhooks-requests", "svix",
    resend_secret, whsec_key(resend_secret), "msg_2q6AbHf3kT0p9WzRsQyXvN1mL4c",
    compact({"type": "email.delivered", "created_at": "2025-12-05T16:00:00.000Z",
             "data": {"email_id": "4ef9a417-02e9-4d39-ad75-9611e0fcc33c",
                      "from": "Acme <onboarding@resend.dev>", "to": ["delivered@resend.dev"],
                      "subject": "Sending this example", "created_at": "2025-12-05T15:59:58.000Z"}}),
    "email.delivered"))

# OpenAI (webhook-* headers).
openai_secret = "whsec_b3BlbmFpLXRlc3Qtd2ViaG9vay1zZWNyZXQtMDAz"
VECTORS.append(standard(
    "openai", "https://platform.openai.com/docs/guides/webhooks", "webhook",
    openai_secret, whsec_key(openai_secret), "wh_685342e6c53c8190a1be43f081506c52",
    compact({"object": "event", "id": "evt_685343a1381c819085d44c354e1b330e",
             "type": "response.completed", "created_at": T,
             "data": {"id": "resp_abc123"}}),
    "response.completed"))

# Replicate (webhook-* headers): the body is the prediction, no event type.
replicate_secret = "whsec_cmVwbGljYXRlLXRlc3Qtc2lnbmluZy1rZXktMDA0"
replicate = standard(
    "replicate", "https://replicate.com/docs/topics/webhooks/verify-webhook", "webhook",
    replicate_secret, whsec_key(replicate_secret), "msg_2q7Cc4fLmN0pQrStUvWxYz12345",
    compact({"id": "ufawqhfynnddngldkgtslldrkq", "model": "black-forest-labs/flux-schnell",
             "version": "dp-4d0bcc010b3049749a251855f12800be", "status": "succeeded",
             "input": {"prompt": "an astronaut riding a horse"},
             "output": ["https://replicate.delivery/xezq/abc/out-0.webp"],
             "created_at": "2025-12-05T15:59:50.100Z", "completed_at": "2025-12-05T15:59:59.800Z"}),
    None)
del replicate["event_type"]
VECTORS.append(replicate)

# Polar: the key is the secret's own bytes (its SDK base64-encodes the text
# before the Standard Webhooks verifier decodes it again), so the secret is
# configured as whsec_ + base64(secret as Polar shows it).
polar_shown = "polar_whs_4Fq9sLk2Xv8TnR1yZpWbC3mD7eH0gJ5u"
polar_secret = "whsec_" + b64(polar_shown.encode())
VECTORS.append(standard(
    "polar", "https://polar.sh/docs/integrate/webhooks/delivery", "webhook",
    polar_secret, polar_shown.encode(), "msg_2q8DdE5gHiJkLmNoPqRsTuVwXyZ",
    compact({"type": "order.paid", "timestamp": "2025-12-05T16:00:00.000000Z",
             "data": {"id": "b3a5e0a4-7c1d-4e5f-9a2b-3c4d5e6f7a8b", "status": "paid",
                      "total_amount": 2000, "currency": "usd", "billing_reason": "purchase"}}),
    "order.paid"))

# Liveblocks (webhook-* headers).
liveblocks_secret = "whsec_bGl2ZWJsb2Nrcy10ZXN0LXNpZ25pbmctc2VjcmV0LTU="
VECTORS.append(standard(
    "liveblocks", "https://liveblocks.io/docs/platform/webhooks", "webhook",
    liveblocks_secret, whsec_key(liveblocks_secret), "msg_2q9EeF6hIjKlMnOpQrStUvWxYzA",
    compact({"type": "storageUpdated",
             "data": {"roomId": "my-room", "projectId": "605a50b01a36d5ea7a2e9104",
                      "updatedAt": "2025-12-05T15:59:59.000Z"}}),
    "storageUpdated"))


# --- HMAC families -----------------------------------------------------------

def hmac_vector(name, follows, secret, headers, body, event_type=None, negatives=(), url=None, verify=None):
    v = {"name": name, "follows": follows, "secret": secret, "headers": headers,
         "body": body, "negative": list(negatives)}
    if event_type is not None:
        v["event_type"] = event_type
    if url is not None:
        v["url"] = url
    if verify is not None:
        v["verify"] = verify
    return v


def simple(name, follows, secret, key, alg, enc, sig_header, prefix, body, other_headers,
           event_type=None, signed=None, url=None):
    """A signature of the body (or of `signed`) in one header."""
    msg = body if signed is None else signed
    raw = mac(alg, key, msg)
    sig = raw.hex() if enc == "hex" else b64(raw)
    headers = dict(other_headers)
    headers[sig_header] = prefix + sig
    wrong = mac(alg, WRONG, msg)
    wrong = wrong.hex() if enc == "hex" else b64(wrong)
    return hmac_vector(name, follows, secret, headers, body, event_type, [
        neg("signature header missing", without(headers, sig_header), "missing"),
        neg("signed with another secret", ({sig_header: prefix + wrong}), "mismatch"),
    ], url=url)


def stamped(name, follows, secret, key, alg, enc, sig_header, ts_header, ts, signed_fn, body,
            other_headers, event_type=None):
    """A signature of signed_fn(ts, body) in one header, the timestamp in another."""
    raw = mac(alg, key, signed_fn(ts, body))
    sig = raw.hex() if enc == "hex" else b64(raw)
    headers = dict(other_headers)
    headers[ts_header] = str(ts)
    headers[sig_header] = sig
    wrong = mac(alg, WRONG, signed_fn(ts, body))
    wrong = wrong.hex() if enc == "hex" else b64(wrong)
    return hmac_vector(name, follows, secret, headers, body, event_type, [
        neg("signature header missing", without(headers, sig_header), "missing"),
        neg("timestamp header missing", without(headers, ts_header), "missing"),
        neg("signed with another secret", ({sig_header: wrong}), "mismatch"),
        neg("timestamp replaced after signing", ({ts_header: str(ts + 1)}), "mismatch"),
    ])


def listed(name, follows, secret, key, sig_header, fmt, ts, signed, body, other_headers, event_type=None):
    """t=..,v1=.. style: fmt(ts, sighex) is the header value."""
    sig = mac("sha256", key, signed(ts, body)).hex()
    headers = dict(other_headers)
    headers[sig_header] = fmt(ts, sig)
    wrong = mac("sha256", WRONG, signed(ts, body)).hex()
    return hmac_vector(name, follows, secret, headers, body, event_type, [
        neg("signature header missing", without(headers, sig_header), "missing"),
        neg("signed with another secret", ({sig_header: fmt(ts, wrong)}), "mismatch"),
        neg("timestamp replaced after signing", ({sig_header: fmt(ts + 1, sig)}), "mismatch"),
    ])


# WorkOS: WorkOS-Signature: t=<ms>, v1=<hex> over "<t>.<body>".
workos_secret = "wk_whsec_Jf83kQm2Lp0xVz7RtYb4NcWe"
VECTORS.append(listed(
    "workos", "https://workos.com/docs/events/data-syncing/webhooks", workos_secret, workos_secret,
    "WorkOS-Signature", lambda t, s: f"t={t}, v1={s}", T_MS, lambda t, b: f"{t}.{b}",
    compact({"id": "event_01JEGFZ5RQ8N3K2V7XH4M9PTAB", "event": "user.created",
             "data": {"object": "user", "id": "user_01JEGFZ4YQ2W8E5R6T7Y8U9I0O",
                      "email": "ada@example.com", "first_name": "Ada", "last_name": "Lovelace",
                      "email_verified": True, "created_at": "2025-12-05T15:59:59.000Z"},
             "created_at": "2025-12-05T16:00:00.123Z"}),
    {"Content-Type": "application/json"}, "user.created"))

# Persona: Persona-Signature: t=<s>,v1=<hex> over "<t>.<body>".
persona_secret = "wbhsec_5d1a2b3c-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
VECTORS.append(listed(
    "persona", "https://docs.withpersona.com/docs/webhooks-best-practices", persona_secret, persona_secret,
    "Persona-Signature", lambda t, s: f"t={t},v1={s}", T, lambda t, b: f"{t}.{b}",
    compact({"data": {"type": "event", "id": "evt_XGuYWp6VGTYjPR2brZLVPqz4",
                      "attributes": {"name": "inquiry.completed",
                                     "payload": {"data": {"type": "inquiry", "id": "inq_2CVZ4HyVg7qaboXz4xYGPhRm",
                                                          "attributes": {"status": "completed", "reference-id": "user-1234"}}},
                                     "created-at": "2025-12-05T16:00:00.000Z"}}}),
    {"Content-Type": "application/json"}, "inquiry.completed"))

# Buildkite: X-Buildkite-Signature: timestamp=<s>,signature=<hex> over "<t>.<body>".
buildkite_secret = "309c9c842a8565adecbd7469e6005989"
VECTORS.append(listed(
    "buildkite", "https://buildkite.com/docs/apis/webhooks", buildkite_secret, buildkite_secret,
    "X-Buildkite-Signature", lambda t, s: f"timestamp={t},signature={s}", T, lambda t, b: f"{t}.{b}",
    compact({"event": "build.finished",
             "build": {"id": "0190e784-eeb7-4ce4-9d2d-87f7aba85433", "number": 1234, "state": "passed",
                       "branch": "main", "commit": "a65572555600c07c7ee79a1bd4f8a19fcbc8ab3a"},
             "pipeline": {"slug": "my-pipeline"}, "sender": {"name": "Ada Lovelace"}}),
    {"Content-Type": "application/json", "X-Buildkite-Event": "build.finished"}, "build.finished"))

# Customer.io: X-CIO-Signature (hex) over "v0:<ts>:<body>".
cio_secret = "5b8f0a9d1c2e3f4a6b7c8d9e0f1a2b3c"
VECTORS.append(stamped(
    "customer-io", "https://customer.io/docs/api/webhooks/", cio_secret, cio_secret, "sha256", "hex",
    "X-CIO-Signature", "X-CIO-Timestamp", T, lambda t, b: f"v0:{t}:{b}",
    compact({"event_id": "01E4C4CT6YDC7Y5M7FE1GWWPQJ", "object_type": "email", "metric": "delivered",
             "timestamp": T,
             "data": {"customer_id": "42", "delivery_id": "RPILAgABcRhIBqSp7kiPekGBIeVh",
                      "identifiers": {"id": "42"}, "recipient": "ada@example.com",
                      "subject": "Welcome aboard"}}),
    {"Content-Type": "application/json"}, "delivered"))

# Close: close-sig-hash (hex) over "<ts><body>", key = hex decoding of signature_key.
close_secret = "058bfb6a3d8cfdc4da7c3be5901b16ae11da982b46a25fb2cd7016e97a140a1c"
VECTORS.append(stamped(
    "close", "https://developer.close.com/topics/webhooks/", close_secret, bytes.fromhex(close_secret),
    "sha256", "hex", "close-sig-hash", "close-sig-timestamp", T, lambda t, b: f"{t}{b}",
    compact({"subscription_id": "whsub_4xMKmWEtaTr7Kq3XXbXvmC",
             "event": {"id": "ev_2sYKRjcrA79yKxi3S4Crd7", "object_type": "opportunity", "action": "updated",
                       "organization_id": "orga_XbVPx5fFbKlYTz9PW5Ih1XDhViV10YihIaEgMEb6fVW",
                       "lead_id": "lead_ZWJjMDNmNGFkMmEyNGI5YTk0ZmQ4MjQzMjM3ZDBkNjE",
                       "changed_fields": ["status_label"], "date_created": "2025-12-05T16:00:00.000000",
                       "data": {"id": "oppo_8H4sjNso7FyBFaeR3RXi5PMJbilfo0c6UPCxsJtEhCO",
                                "status_label": "Won", "value": 100000, "value_currency": "USD"}}}),
    {"Content-Type": "application/json"}, "opportunity"))

# Webflow: x-webflow-signature (hex) over "<ts ms>:<body>".
webflow_secret = "d2f1c0b9a8e7d6c5b4a3f2e1d0c9b8a7"
VECTORS.append(stamped(
    "webflow", "https://developers.webflow.com/docs/verifying-webhook-signatures", webflow_secret,
    webflow_secret, "sha256", "hex", "x-webflow-signature", "x-webflow-timestamp", T_MS,
    lambda t, b: f"{t}:{b}",
    compact({"triggerType": "form_submission",
             "payload": {"name": "Contact Us", "siteId": "65427cf400e02b306eaa049c",
                         "data": {"Name": "Ada Lovelace", "Email": "ada@example.com"},
                         "submittedAt": "2025-12-05T16:00:00.000Z", "id": "6321ca84df3949bfc6752327",
                         "formId": "65429eadebe8a9f3a30f62d0"}}),
    {"Content-Type": "application/json"}, "form_submission"))

# Cashfree: x-webhook-signature (base64) over "<ts ms><body>".
cashfree_secret = "cfsk_ma_test_3f6c1b2a9e8d7c6b5a4f3e2d1c0b9a8f"
VECTORS.append(stamped(
    "cashfree", "https://www.cashfree.com/docs/payments/online/webhooks/signature-verification",
    cashfree_secret, cashfree_secret, "sha256", "base64", "x-webhook-signature", "x-webhook-timestamp",
    T_MS, lambda t, b: f"{t}{b}",
    compact({"data": {"order": {"order_id": "order_1764950400", "order_amount": 499.0, "order_currency": "INR"},
                      "payment": {"cf_payment_id": 5114910522473, "payment_status": "SUCCESS",
                                  "payment_amount": 499.0, "payment_group": "upi"}},
             "event_time": "2025-12-05T21:30:00+05:30", "type": "PAYMENT_SUCCESS_WEBHOOK"}),
    {"Content-Type": "application/json", "x-webhook-version": "2023-08-01"}, "PAYMENT_SUCCESS_WEBHOOK"))

# Front application webhooks: x-front-signature (base64) over "<ts ms>:<body>".
front_app_secret = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"
VECTORS.append(stamped(
    "frontapp", "https://dev.frontapp.com/docs/application-webhooks", front_app_secret, front_app_secret,
    "sha256", "base64", "x-front-signature", "x-front-request-timestamp", T_MS, lambda t, b: f"{t}:{b}",
    compact({"type": "inbound_received", "authorization": {"id": "cmp_abc"},
             "payload": {"id": "evt_55c8c149", "type": "inbound", "emitted_at": T,
                         "conversation": {"id": "cnv_55c8c149", "subject": "Order 1234"}}}),
    {"Content-Type": "application/json"}, "inbound_received"))

# Front rule webhooks: X-Front-Signature = base64 HMAC-SHA1 of the body.
front_rule_secret = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
VECTORS.append(simple(
    "frontapp-rule", "https://dev.frontapp.com/docs/rule-webhooks", front_rule_secret, front_rule_secret,
    "sha1", "base64", "X-Front-Signature", "",
    compact({"_links": {"self": "https://api2.frontapp.com/events/evt_55c8c149"}, "id": "evt_55c8c149",
             "type": "inbound", "emitted_at": T,
             "conversation": {"id": "cnv_55c8c149", "subject": "Order 1234", "status": "unassigned"}}),
    {"Content-Type": "application/json"}, "inbound"))

# Attio: Attio-Signature = hex HMAC-SHA256 of the body.
attio_secret = "attio_whsec_0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e"
VECTORS.append(simple(
    "attio", "https://docs.attio.com/rest-api/how-to/webhooks", attio_secret, attio_secret, "sha256", "hex",
    "Attio-Signature", "",
    compact({"webhook_id": "8c2c8d5a-6e5f-4b3a-9d1e-2f3a4b5c6d7e",
             "events": [{"event_type": "record.created",
                         "id": {"workspace_id": "14beef7a-99f7-4534-a87e-70b564330a4c",
                                "object_id": "97052eb9-e65e-443f-a297-f2d9a4a7f795",
                                "record_id": "bf071e1f-6035-429d-b874-d83ea64ea13b"},
                         "actor": {"type": "workspace-member", "id": "50cf242c-7fa3-4cad-87d0-75b1af71c57b"}}]}),
    {"Content-Type": "application/json", "Idempotency-Key": "5ef3b1c2-7a8b-4c9d-8e0f-1a2b3c4d5e6f"},
    "record.created"))

# Airtable: X-Airtable-Content-MAC: hmac-sha256=<hex>, key = base64 decoding of macSecretBase64.
airtable_secret = base64.b64encode(b"airtable test MAC secret, 32 byt").decode()
VECTORS.append(simple(
    "airtable", "https://airtable.com/developers/web/api/webhooks-overview", airtable_secret,
    base64.b64decode(airtable_secret), "sha256", "hex", "X-Airtable-Content-MAC", "hmac-sha256=",
    compact({"base": {"id": "appjRdIX59U4YEy4l"}, "webhook": {"id": "achXH94CxHYGdUcje"},
             "timestamp": "2025-12-05T16:00:00.000Z"}),
    {"Content-Type": "application/json"}))

# Trello: X-Trello-Webhook = base64 HMAC-SHA1 of body + callback URL.
trello_secret = "0f4d2c1b8a7e6d5c4b3a29180716f5e4d3c2b1a09f8e7d6c5b4a392817060504"
trello_url = "https://hooks.example.com/in/trello"
trello_body = compact({"model": {"id": "4d5ea62fd76aa1136000000c", "name": "Roadmap"},
                       "action": {"id": "5f3c2155d947844beedda991", "idMemberCreator": "5e4b3a2f1d0c9b8a7f6e5d4c",
                                  "type": "updateCard", "date": "2025-12-05T16:00:00.000Z",
                                  "data": {"card": {"id": "5f3c2155d947844beedda990", "name": "Ship it"},
                                           "listAfter": {"name": "Done"}, "listBefore": {"name": "Doing"}}}})
VECTORS.append(simple(
    "trello", "https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks", trello_secret,
    trello_secret, "sha1", "base64", "X-Trello-Webhook", "", trello_body,
    {"Content-Type": "application/json"}, "updateCard", signed=trello_body + trello_url, url=trello_url))

# Todoist: X-Todoist-Hmac-SHA256 = base64 HMAC-SHA256 of the body.
todoist_secret = "7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a29"
VECTORS.append(simple(
    "todoist", "https://doist.github.io/todoist-sdk-typescript/api/functions/verifyWebhookSignature",
    todoist_secret, todoist_secret, "sha256", "base64", "X-Todoist-Hmac-SHA256", "",
    compact({"event_name": "item:completed", "user_id": "2671355",
             "event_data": {"id": "6X7rM8997g3RQmvh", "content": "Buy milk", "checked": True,
                            "project_id": "6Jf8VQXxpwv56VQ7"},
             "initiator": {"id": "2671355", "full_name": "Ada Lovelace"},
             "triggered_at": "2025-12-05T16:00:00.000000Z", "version": "10"}),
    {"Content-Type": "application/json", "X-Todoist-Delivery-ID": "d1b2c3a4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
     "User-Agent": "Todoist-Webhooks"}, "item:completed"))

# Heroku: Heroku-Webhook-Hmac-SHA256 = base64 HMAC-SHA256 of the body.
heroku_secret = "5f4e3d2c1b0a99887766554433221100"
VECTORS.append(simple(
    "heroku", "https://devcenter.heroku.com/articles/app-webhooks", heroku_secret, heroku_secret,
    "sha256", "base64", "Heroku-Webhook-Hmac-SHA256", "",
    compact({"id": "4f6c3c4b-2d1a-4e5f-8a7b-9c0d1e2f3a4b", "action": "create", "resource": "release",
             "data": {"id": "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d", "version": 42, "status": "succeeded",
                      "app": {"name": "example-app"}, "description": "Deploy a1b2c3d"},
             "created_at": "2025-12-05T16:00:00Z", "version": "application/vnd.heroku+json; version=3"}),
    {"Content-Type": "application/json"}))

# HCP Terraform: X-TFE-Notification-Signature = hex HMAC-SHA512 of the body.
tfc_secret = "tfc-notification-token-3b8c1d"
VECTORS.append(simple(
    "terraform-cloud", "https://developer.hashicorp.com/terraform/cloud-docs/workspaces/settings/notifications",
    tfc_secret, tfc_secret, "sha512", "hex", "X-TFE-Notification-Signature", "",
    compact({"payload_version": 1, "notification_configuration_id": "nc-AeUQ2zfKZzW9TiGZ",
             "run_url": "https://app.terraform.io/app/acme-org/my-workspace/runs/run-FwnENkvDnrpyFC7M",
             "run_id": "run-FwnENkvDnrpyFC7M", "run_message": "Add five new queue workers",
             "run_created_at": "2025-12-05T15:58:00.000Z", "run_created_by": "sample-user",
             "workspace_id": "ws-XdeUVMWShTesDMME", "workspace_name": "my-workspace",
             "organization_name": "acme-org",
             "notifications": [{"message": "Run Applied", "trigger": "run:completed", "run_status": "applied",
                                "run_updated_at": "2025-12-05T16:00:00.000Z", "run_updated_by": "sample-user"}]}),
    {"Content-Type": "application/json"}, "run:completed"))

# CircleCI: circleci-signature: v1=<hex> of the body.
circleci_secret = "circle-webhook-secret-8d7c6b"
VECTORS.append(simple(
    "circleci", "https://circleci.com/docs/webhooks/", circleci_secret, circleci_secret, "sha256", "hex",
    "circleci-signature", "v1=",
    compact({"id": "3888f21b-eaa7-38e3-8f3d-75a63bba8895", "type": "workflow-completed",
             "happened_at": "2025-12-05T16:00:00.000Z", "webhook": {"id": "cf8c4fdd-0587-4da1-b4ca-4846e9640af9",
                                                                   "name": "Sample Webhook"},
             "workflow": {"id": "fda08377-fe7e-46b1-8992-3a7aaecac9c3", "name": "build-test-deploy",
                          "status": "success"}}),
    {"Content-Type": "application/json", "Circleci-Event-Type": "workflow-completed"}, "workflow-completed"))

# Gitea and Gogs: hex HMAC-SHA256 of the body, no prefix.
push = compact({"ref": "refs/heads/main", "before": "28e1879d029cb852e4844d9c718537df08844e03",
                "after": "bffeb74224043ba2feb48d137756c8a9331c449a",
                "commits": [{"id": "bffeb74224043ba2feb48d137756c8a9331c449a", "message": "Update README\n"}],
                "repository": {"id": 140, "full_name": "alice/webhooks"}, "pusher": {"login": "alice"}})
gitea_secret = "gitea-hook-secret-b47c"
VECTORS.append(simple(
    "gitea", "https://docs.gitea.com/usage/webhooks", gitea_secret, gitea_secret, "sha256", "hex",
    "X-Gitea-Signature", "", push,
    {"Content-Type": "application/json", "X-Gitea-Delivery": "f6266f16-1bf3-46a5-9ea4-602e06ead473",
     "X-Gitea-Event": "push"}, "push"))
gogs_secret = "gogs-hook-secret-91d2"
VECTORS.append(simple(
    "gogs", "https://gogs.io/docs/advancing/webhooks", gogs_secret, gogs_secret, "sha256", "hex",
    "X-Gogs-Signature", "", push,
    {"Content-Type": "application/json", "X-Gogs-Delivery": "f6266f16-1bf3-46a5-9ea4-602e06ead473",
     "X-Gogs-Event": "push"}, "push"))

# Onfido: X-SHA2-Signature = hex HMAC-SHA256 of the body.
onfido_secret = "_ABC123abc123ABC123abc123ABC123_"
VECTORS.append(simple(
    "onfido", "https://documentation.onfido.com/api/manual-webhook-signature-verification", onfido_secret,
    onfido_secret, "sha256", "hex", "X-SHA2-Signature", "",
    compact({"payload": {"resource_type": "check", "action": "check.completed",
                         "object": {"id": "bd33d7a5-2fbe-4a48-9be1-a0e0d6bd0ee5", "status": "complete",
                                    "completed_at_iso8601": "2025-12-05T16:00:00Z",
                                    "href": "https://api.eu.onfido.com/v3.6/checks/bd33d7a5-2fbe-4a48-9be1-a0e0d6bd0ee5"}}}),
    {"Content-Type": "application/json"}, "check.completed"))

# Veriff: X-HMAC-SIGNATURE = hex HMAC-SHA256 of the body.
veriff_secret = "a1b2c3d4-veriff-shared-secret-e5f6"
VECTORS.append(simple(
    "veriff", "https://devdocs.veriff.com/v1/docs/hmac-authentication-and-endpoint-security", veriff_secret,
    veriff_secret, "sha256", "hex", "X-HMAC-SIGNATURE", "",
    compact({"status": "success",
             "verification": {"id": "12df6045-3846-3e45-946a-14fa6136d78b", "code": 9001, "status": "approved",
                              "person": {"firstName": "ADA", "lastName": "LOVELACE"},
                              "decisionTime": "2025-12-05T15:59:58.000Z"},
             "technicalData": {"ip": "186.153.67.122"}}),
    {"Content-Type": "application/json", "X-AUTH-CLIENT": "8e4f7cd8-7a19-4d7d-971e-d0a1a6fc8e1e"}))

# LaunchDarkly: X-LD-Signature = hex HMAC-SHA256 of the body.
ld_secret = "ld-webhook-secret-6a5b4c3d2e1f"
VECTORS.append(simple(
    "launchdarkly", "https://docs.launchdarkly.com/home/connecting/webhooks", ld_secret, ld_secret,
    "sha256", "hex", "X-LD-Signature", "",
    compact({"_id": "6752d1a0e3b0a8f1c2d3e4f5", "date": T * 1000, "kind": "flag", "name": "New checkout",
             "description": "- Turned on the flag", "accesses": [{"action": "updateOn",
                                                                "resource": "proj/default:env/production:flag/new-checkout"}],
             "member": {"email": "ada@example.com", "firstName": "Ada", "lastName": "Lovelace"}}),
    {"Content-Type": "application/json"}, "flag"))

# Webex: X-Spark-Signature = hex HMAC-SHA1 of the body.
webex_secret = "somesupersecretphrase"
VECTORS.append(simple(
    "webex", "https://developer.webex.com/blog/using-a-webhook-secret", webex_secret, webex_secret,
    "sha1", "hex", "X-Spark-Signature", "",
    compact({"id": "Y2lzY29zcGFyazovL3VzL1dFQkhPT0svOTZhYmMyYWEtM2RjYy0xMWU1LWExNTItZmUzNDgxOWNkYzlh",
             "name": "New messages", "resource": "messages", "event": "created",
             "orgId": "OTZhYmMyYWEtM2RjYy0xMWU1LWExNTItZmUzNDgxOWNkYzlh", "createdBy": "fd5bd0a5",
             "actorId": "fd5bd0a5",
             "data": {"id": "Y2lzY29zcGFyazovL3VzL01FU1NBR0UvOTJkYjNiZTAtNDNiZC0xMWU2LThhZTktZGQ1YjNkZmM1NjVk",
                      "roomId": "Y2lzY29zcGFyazovL3VzL1JPT00vYmJjZWIxYWQtNDNmMS0zYjU4LTkxNDctZjE0YmIwYzRkMTU0",
                      "personEmail": "ada@example.com", "created": "2025-12-05T16:00:00.000Z"}}),
    {"Content-Type": "application/json"}, "created"))

# Microsoft Teams: Authorization: HMAC <base64>, key = base64 decoding of the security token.
teams_secret = base64.b64encode(b"teams outgoing webhook token 32b").decode()
VECTORS.append(simple(
    "microsoft-teams",
    "https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-outgoing-webhook",
    teams_secret, base64.b64decode(teams_secret), "sha256", "base64", "Authorization", "HMAC ",
    compact({"type": "message", "id": "1764950400123", "timestamp": "2025-12-05T16:00:00.123Z",
             "serviceUrl": "https://smba.trafficmanager.net/emea/", "channelId": "msteams",
             "from": {"id": "29:1abc", "name": "Ada Lovelace"},
             "conversation": {"isGroup": True, "id": "19:abc@thread.skype;messageid=1764950400123"},
             "text": "<at>Deploybot</at> status"}),
    {"Content-Type": "application/json"}, "message"))

# Help Scout: X-HelpScout-Signature = base64 HMAC-SHA1 of the body.
helpscout_secret = "my-secret-key"
VECTORS.append(simple(
    "helpscout", "https://developer.helpscout.com/webhooks/", helpscout_secret, helpscout_secret,
    "sha1", "base64", "X-HelpScout-Signature", "",
    compact({"id": 2391938111, "number": 349, "type": "email", "status": "active", "state": "published",
             "subject": "Order 1234", "mailboxId": 85,
             "primaryCustomer": {"id": 227423617, "email": "ada@example.com"},
             "createdAt": "2025-12-05T16:00:00Z"}),
    {"Content-Type": "application/json", "X-HelpScout-Event": "convo.created"}, "convo.created"))

# Nylas: x-nylas-signature = hex HMAC-SHA256 of the body.
nylas_secret = "nylas-webhook-secret-0a1b2c3d4e5f"
VECTORS.append(simple(
    "nylas", "https://developer.nylas.com/docs/v3/notifications/", nylas_secret, nylas_secret,
    "sha256", "hex", "x-nylas-signature", "",
    compact({"specversion": "1.0", "type": "message.created", "source": "/google/emails/realtime",
             "id": "7a8b9c0d1e2f3a4b5c6d7e8f", "time": T, "webhook_delivery_attempt": 1,
             "data": {"application_id": "ad410018-d306-43f9-8361-fa5d7b2172e0",
                      "object": {"id": "18df4d6c1f4b3c2a", "grant_id": "1e0b7b1c-3f4d-4a5b-9c6d-7e8f9a0b1c2d",
                                 "object": "message", "subject": "Hello"}}}),
    {"Content-Type": "application/json"}, "message.created"))

# Docusign Connect: X-DocuSign-Signature-1 = base64 HMAC-SHA256 of the body, key as shown.
docusign_secret = "Xb0cIv2XqyzS3zYtm0aWd+8I4wZ6uVnEjkRlFp1oQ7s="
VECTORS.append(simple(
    "docusign",
    "https://www.docusign.com/blog/developers/manually-authenticating-hmac-signatures-docusign-connect-webhook-configurations",
    docusign_secret, docusign_secret, "sha256", "base64", "X-DocuSign-Signature-1", "",
    compact({"event": "envelope-completed", "apiVersion": "v2.1",
             "uri": "/restapi/v2.1/accounts/8a4c6d2e/envelopes/4b7c8d9e-0f1a-2b3c-4d5e-6f7a8b9c0d1e",
             "retryCount": 0, "configurationId": 10418271, "generatedDateTime": "2025-12-05T16:00:00.0000000Z",
             "data": {"accountId": "8a4c6d2e-1b3f-4a5c-9d7e-0f1a2b3c4d5e", "userId": "5d6e7f8a",
                      "envelopeId": "4b7c8d9e-0f1a-2b3c-4d5e-6f7a8b9c0d1e"}}),
    {"Content-Type": "application/json", "X-Authorization-Digest": "HMACSHA256"}, "envelope-completed"))

# Intuit: intuit-signature = base64 HMAC-SHA256 of the body, key = verifier token.
intuit_secret = "a9b8c7d6-e5f4-4321-9abc-def012345678"
VECTORS.append(simple(
    "intuit",
    "https://developer.intuit.com/app/developer/qbo/docs/develop/webhooks/managing-webhooks-notifications",
    intuit_secret, intuit_secret, "sha256", "base64", "intuit-signature", "",
    compact({"eventNotifications": [{"realmId": "1185883450",
                                     "dataChangeEvent": {"entities": [{"name": "Customer", "id": "1",
                                                                       "operation": "Create",
                                                                       "lastUpdated": "2025-12-05T08:00:00-0800"}]}}]}),
    {"Content-Type": "application/json"}))

# Squarespace: Squarespace-Signature = hex HMAC-SHA256 of the body, key = hex decoding of the secret.
squarespace_secret = "F3F9B981C78E7A6187E42853F6CE2804177E98206164779423B02DEC981ACD6B"
VECTORS.append(simple(
    "squarespace", "https://developers.squarespace.com/webhooks/verifying-notifications", squarespace_secret,
    bytes.fromhex(squarespace_secret), "sha256", "hex", "Squarespace-Signature", "",
    compact({"id": "5c2ba184b63ed3cb411ce2b1", "websiteId": "5f3c3d55ac435e1a051f77b3",
             "subscriptionId": "5f3c2155d947844beedda991", "topic": "order.create",
             "createdOn": "2025-12-05T16:00:00.000Z",
             "data": {"orderId": "5e2b9c4b3e8f5d2a1c0b9a87"}}),
    {"Content-Type": "application/json", "User-Agent": "Squarespace/1.0"}, "order.create"))

# Storyblok: webhook-signature = hex HMAC-SHA1 of the body.
storyblok_secret = "hello"
VECTORS.append(simple(
    "storyblok", "https://www.storyblok.com/tp/webhook-secret-with-different-technologies", storyblok_secret,
    storyblok_secret, "sha1", "hex", "webhook-signature", "",
    compact({"text": "The user ada@example.com published the Story Home (home)", "action": "published",
             "space_id": 65703, "story_id": 2270165, "full_slug": "home"}),
    {"Content-Type": "application/json"}, "published"))

# FastSpring: X-FS-Signature = base64 HMAC-SHA256 of the body.
fastspring_secret = "fs-hmac-sha256-secret-4c3b2a"
VECTORS.append(simple(
    "fastspring", "https://developer.fastspring.com/docs/message-security", fastspring_secret,
    fastspring_secret, "sha256", "base64", "X-FS-Signature", "",
    compact({"events": [{"id": "6nF8ZVb3TD2Cn8XP7LBxIg", "processed": False, "created": T * 1000,
                         "type": "order.completed", "live": False,
                         "data": {"order": "nlcXzPiHSR6jrO7PhFthsw", "reference": "ACM251205-1234-56789",
                                  "currency": "USD", "total": 19.99}}]}),
    {"Content-Type": "application/json"}, "order.completed"))

# Acuity: X-Acuity-Signature = base64 HMAC-SHA256 of the (form) body, key = API key.
acuity_secret = "4c8f5d2e1a9b7c6d3e0f8a1b2c4d6e8f"
VECTORS.append(simple(
    "acuity", "https://developers.acuityscheduling.com/docs/webhooks", acuity_secret, acuity_secret,
    "sha256", "base64", "X-Acuity-Signature", "",
    "action=scheduled&id=1234567890&calendarID=4567&appointmentTypeID=891011",
    {"Content-Type": "application/x-www-form-urlencoded"}))

# Tally: Tally-Signature = base64 HMAC-SHA256 of the body.
tally_secret = "tally-signing-secret-5e4d3c2b1a"
VECTORS.append(simple(
    "tally", "https://tally.so/help/webhooks", tally_secret, tally_secret, "sha256", "base64",
    "Tally-Signature", "",
    compact({"eventId": "a4cb511e-d513-4fa5-baee-b815d718dfd1", "eventType": "FORM_RESPONSE",
             "createdAt": "2025-12-05T16:00:00.000Z",
             "data": {"responseId": "2wgx4n", "submissionId": "2wgx4n", "respondentId": "dwQKYm",
                      "formId": "VwbNEw", "formName": "Beta sign-up", "createdAt": "2025-12-05T16:00:00.000Z",
                      "fields": [{"key": "question_3EKz4n", "label": "Email", "type": "INPUT_EMAIL",
                                  "value": "ada@example.com"}]}}),
    {"Content-Type": "application/json"}, "FORM_RESPONSE"))

# SurveyMonkey: Sm-Signature = base64 HMAC-SHA1 of the body, key "<client id>&<secret>".
sm_client, sm_api_secret = "a1B2c3D4e5F6g7H8", "227136048791628139483058613726453"
sm_secret = sm_client + "&" + sm_api_secret
VECTORS.append(simple(
    "surveymonkey", "https://api.surveymonkey.com/v3/docs", sm_secret, sm_secret, "sha1", "base64",
    "Sm-Signature", "",
    compact({"name": "My Survey Webhook", "filter_type": "survey", "filter_id": "123456789",
             "event_type": "response_completed", "event_id": "10000000001",
             "object_type": "response", "object_id": "987654321",
             "event_datetime": "2025-12-05T16:00:00.000000+00:00",
             "resources": {"survey_id": "123456789", "collector_id": "111222333",
                           "respondent_id": "444555666", "recipient_id": "0"}}),
    {"Content-Type": "application/json", "Sm-Apikey": sm_client}, "response_completed"))


# --- output ------------------------------------------------------------------

def write(v):
    name = v["name"]
    lines = [
        "# Written by gen_b.py; do not edit.",
        f"preset: {name}",
        "origin: python",
        f"follows: {v['follows']}",
        f"secret: {q(v['secret'])}",
    ]
    if "verify" in v:
        lines.append("verify: {" + ", ".join(f"{k}: {q(x)}" for k, x in v["verify"].items()) + "}")
    lines += [
        f"now: {NOW}",
        "method: POST",
        f"url: {q(v.get('url') or 'https://hooks.example.com/in/' + name)}",
        "headers:",
    ]
    lines += [f"  {k}: {q(x)}" for k, x in v["headers"].items()]
    lines.append(f"body: {q(v['body'])}")
    if v.get("event_type") is not None:
        lines.append(f"event_type: {q(v['event_type'])}")
    if v["negative"]:
        lines.append("negative:")
        for n in v["negative"]:
            lines.append(f"  - name: {q(n['name'])}")
            lines.append("    headers:")
            lines += [f"      {k}: {q(x)}" for k, x in n["headers"].items()]
            lines.append(f"    err: {n['err']}")
    with open(os.path.join(HERE, name + ".yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    names = [v["name"] for v in VECTORS]
    assert len(names) == len(set(names)), "duplicate vector"
    for v in VECTORS:
        write(v)
    print(f"wrote {len(VECTORS)} vectors")
