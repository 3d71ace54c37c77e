#!/usr/bin/env python3
"""Writes the vectors of the group-a presets (verify/presets.d/a.yaml).

Each vector is the provider's published example where it publishes one
(origin: published, used exactly and checked here), else a realistic
delivery of the provider signed here with the standard library the way the
provider's documentation describes (the `follows` address). Run from
anywhere:

    python3 verify/testdata/presets/gen_a.py          # writes <name>.yaml
    python3 verify/testdata/presets/gen_a.py --check  # recomputes every MAC with openssl

--check is a second, independent computation of every HMAC (openssl dgst
-hmac / -macopt hexkey) over the signed bytes, so a slip in Python's use of
hmac cannot hide in the data.
"""

import base64
import calendar
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# Every MAC computed below, kept for --check: (algorithm, key, message, digest).
MACS = []


def mac(alg, key, msg):
    if isinstance(key, str):
        key = key.encode()
    if isinstance(msg, str):
        msg = msg.encode()
    d = hmac.new(key, msg, getattr(hashlib, alg)).digest()
    MACS.append((alg, key, msg, d))
    return d


def hexmac(alg, key, msg):
    return mac(alg, key, msg).hex()


def b64mac(alg, key, msg):
    return base64.b64encode(mac(alg, key, msg)).decode()


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def rfc3339_epoch(s):
    """Unix seconds of an RFC 3339 time (Z or ±hh:mm, optional fraction)."""
    main, off = s, 0
    if s.endswith("Z"):
        main = s[:-1]
    elif s[-6] in "+-" and s[-3] == ":":
        main = s[:-6]
        sign = 1 if s[-6] == "+" else -1
        off = sign * (int(s[-5:-3]) * 3600 + int(s[-2:]) * 60)
    main = main.split(".")[0]
    return calendar.timegm(time.strptime(main, "%Y-%m-%dT%H:%M:%S")) - off


OTHER = "not-the-configured-secret-0000"

# A timestamped vector's `now` is one second after its signed timestamp (a
# delivery's latency): the harness moves `now` by the tolerance plus two
# seconds both ways and expects ErrExpired, so `now` must stay within two
# seconds of the timestamp.


def vector(name, follows, secret, now, headers, body, event_type, negative, url=None):
    return {
        "preset": name,
        "origin": "python",
        "follows": follows,
        "secret": secret,
        "now": now,
        "method": "POST",
        "url": url or "https://hooks.example.com/in/" + name,
        "headers": headers,
        "body": body,
        "event_type": event_type,
        "negative": negative,
    }


def without(headers, name):
    return {k: v for k, v in headers.items() if k != name}


# A negative's headers are laid over the positive's ("" removes one) and its
# body, when absent, is the positive's (verify/presets_test.go).

def neg_missing(headers, sig_header, body):
    return {"name": "no " + sig_header + " header", "headers": {sig_header: ""}, "err": "missing"}


def neg_other(headers, sig_header, value, body):
    return {"name": "signed with another secret", "headers": {sig_header: value}, "err": "mismatch"}


def neg_header(name, header, value, err="mismatch"):
    return {"name": name, "headers": {header: value}, "err": err}


# ---------------------------------------------------------------- vectors

V = []


def simple(name, follows, secret, sig_header, sign, headers, body, event_type, extra_neg=()):
    """A scheme that signs the raw body only: sign(secret, body) is the header value."""
    h = dict(headers)
    h[sig_header] = sign(secret, body)
    neg = [neg_missing(h, sig_header, body), neg_other(h, sig_header, sign(OTHER, body), body)]
    neg.extend(extra_neg)
    V.append(vector(name, follows, secret, 1764928800, h, body, event_type, neg))


# Paddle: Paddle-Signature: ts=<unix>;h1=<hex HMAC-SHA256 of "ts:body">.
def paddle():
    secret = "pdl_ntfset_01jfy4w0vd6v3b8hbx2a7r1q4c_6s1NvXa2uQ0YeK9pLmR3tZ"
    ts = 1764928790
    body = compact({
        "event_id": "evt_01jfy5c8m3k9q2w7r4t6y8u0ia",
        "event_type": "transaction.completed",
        "occurred_at": "2025-12-05T10:00:00.000000Z",
        "notification_id": "ntf_01jfy5c8nb7h3g5d2s4a6f8j0k",
        "data": {"id": "txn_01jfy5b2x4c6v8n0m2q4w6e8r0", "status": "completed",
                 "customer_id": "ctm_01jfy4z9a1s3d5f7g9h1j3k5l7", "currency_code": "USD",
                 "details": {"totals": {"subtotal": "2900", "tax": "0", "total": "2900"}}},
    })
    sig = "ts=%d;h1=%s" % (ts, hexmac("sha256", secret, "%d:%s" % (ts, body)))
    h = {"Content-Type": "application/json", "Paddle-Signature": sig}
    other = "ts=%d;h1=%s" % (ts, hexmac("sha256", OTHER, "%d:%s" % (ts, body)))
    neg = [neg_missing(h, "Paddle-Signature", body),
           neg_other(h, "Paddle-Signature", other, body),
           {"name": "timestamp changed, signature kept", "headers": {"Paddle-Signature": sig.replace("ts=%d" % ts, "ts=%d" % (ts - 1))},
            "err": "mismatch"}]
    V.append(vector("paddle", "https://developer.paddle.com/webhooks/signature-verification",
                    secret, ts + 1, h, body, "transaction.completed", neg))


# Zoom: x-zm-signature: v0=<hex HMAC-SHA256 of "v0:ts:body">.
def zoom():
    secret = "uXq3Zr8TkL2vN5wP9yB1cD"
    ts = 1764928790
    body = compact({
        "event": "meeting.started",
        "payload": {"account_id": "AAAAAABBBB", "object": {
            "id": "85746352413", "uuid": "4444AAAiAAAAAiAiAiiAii==", "host_id": "x1yCzABCDEfg23HiJKl4mN",
            "topic": "Weekly sync", "type": 2, "start_time": "2025-12-05T10:00:00Z",
            "timezone": "Europe/Berlin", "duration": 30}},
        "event_ts": 1764928790123,
    })
    sig = "v0=" + hexmac("sha256", secret, "v0:%d:%s" % (ts, body))
    h = {"Content-Type": "application/json", "x-zm-request-timestamp": str(ts), "x-zm-signature": sig,
         "x-zm-trackingid": "v=2.0;clid=us06;rid=WEB_1a2b3c4d5e6f"}
    neg = [neg_missing(h, "x-zm-signature", body),
           neg_other(h, "x-zm-signature", "v0=" + hexmac("sha256", OTHER, "v0:%d:%s" % (ts, body)), body),
           {"name": "timestamp header changed", "headers": {"x-zm-request-timestamp": str(ts - 1)},
            "err": "mismatch"}]
    V.append(vector("zoom", "https://developers.zoom.us/docs/api/webhooks/", secret, ts + 1, h, body,
                    "meeting.started", neg))


# Linear: Linear-Signature: <hex HMAC-SHA256 of body>; webhookTimestamp (ms) in the body.
def linear():
    secret = "lin_wh_7PmQx2Rv9sKd4Tn6Yb8Wc1Zf3Hj5Lg0A"
    ts_ms = 1764928790000
    body = compact({
        "action": "create", "type": "Issue", "createdAt": "2025-12-05T09:59:50.000Z",
        "organizationId": "9b5e2c1a-8d7f-4e3a-b6c4-1f2e3d4c5b6a",
        "data": {"id": "2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9", "identifier": "ENG-123",
                 "title": "Webhook retries double-count", "priority": 2,
                 "teamId": "72b2a2dc-6f4f-4423-9d34-24b5bd10634a"},
        "url": "https://linear.app/acme/issue/ENG-123/webhook-retries-double-count",
        "webhookTimestamp": ts_ms, "webhookId": "000042e3-d123-4980-b49f-8e140eef9329",
    })
    h = {"Content-Type": "application/json", "Linear-Delivery": "234d1a4e-b617-4388-90fe-adc3633d6b72",
         "Linear-Event": "Issue", "Linear-Signature": hexmac("sha256", secret, body)}
    neg = [neg_missing(h, "Linear-Signature", body),
           neg_other(h, "Linear-Signature", hexmac("sha256", OTHER, body), body)]
    V.append(vector("linear", "https://linear.app/docs/api/sdk-webhooks", secret, ts_ms // 1000 + 1, h, body,
                    "Issue", neg))


def intercom():
    body = compact({
        "type": "notification_event", "app_id": "a86dr8yl", "id": "notif_78c122d0-23ba-11e4-9464-79b01267cc2e",
        "topic": "conversation.user.created", "delivery_attempts": 1, "first_sent_at": 1764928790,
        "data": {"type": "notification_event_data", "item": {
            "type": "conversation", "id": "147", "created_at": 1764928788, "state": "open",
            "source": {"type": "conversation", "delivered_as": "customer_initiated", "body": "<p>Hi there</p>"}}},
    })
    simple("intercom", "https://developers.intercom.com/intercom-api-reference/v1.0/reference/signed-notifications",
           "b3f5c2d1e0a94f8b7c6d5e4f3a2b1c0d", "X-Hub-Signature",
           lambda s, b: "sha1=" + hexmac("sha1", s, b),
           {"Content-Type": "application/json", "User-Agent": "intercom-parrot-service-client/1.0"},
           body, "conversation.user.created")


def typeform():
    body = compact({
        "event_id": "01JF9QZ7R3X5K8M2N4P6Q8S0T2", "event_type": "form_response",
        "form_response": {"form_id": "lT4Z3j", "token": "a3a12ec67a1365927098a606107fac15",
                          "submitted_at": "2025-12-05T09:59:48Z", "landed_at": "2025-12-05T09:58:12Z",
                          "definition": {"id": "lT4Z3j", "title": "Customer feedback"},
                          "answers": [{"type": "choice", "choice": {"label": "Very happy"},
                                       "field": {"id": "JwWggjAKtOkA", "type": "multiple_choice"}}]},
    })
    simple("typeform", "https://www.typeform.com/developers/webhooks/secure-your-webhooks/",
           "2f9c1b7e4a6d8f0e3c5b7a9d1e3f5a7c9b1d3e5f", "Typeform-Signature",
           lambda s, b: "sha256=" + b64mac("sha256", s, b),
           {"Content-Type": "application/json", "User-Agent": "Typeform Webhooks"},
           body, "form_response")


def calendly():
    secret = "Zt9mQ2xR7vK4pW1nB6cL8dF3hJ5sG0aY"
    ts = 1764928790
    body = compact({
        "created_at": "2025-12-05T09:59:50.000000Z", "created_by": "https://api.calendly.com/users/AAAAAAAAAAAAAAAA",
        "event": "invitee.created",
        "payload": {"uri": "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA",
                    "email": "test@example.com", "name": "John Doe", "status": "active",
                    "scheduled_event": {"name": "15 Minute Meeting", "start_time": "2025-12-10T14:00:00.000000Z"}},
    })
    sig = "t=%d,v1=%s" % (ts, hexmac("sha256", secret, "%d.%s" % (ts, body)))
    h = {"Content-Type": "application/json", "Calendly-Webhook-Signature": sig}
    neg = [neg_missing(h, "Calendly-Webhook-Signature", body),
           neg_other(h, "Calendly-Webhook-Signature",
                     "t=%d,v1=%s" % (ts, hexmac("sha256", OTHER, "%d.%s" % (ts, body))), body),
           {"name": "timestamp changed, signature kept",
            "headers": {"Calendly-Webhook-Signature": sig.replace("t=%d" % ts, "t=%d" % (ts - 1))},
            "err": "mismatch"}]
    V.append(vector("calendly", "https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures",
                    secret, ts + 1, h, body, "invitee.created", neg))


def bitbucket():
    body = compact({
        "push": {"changes": [{"new": {"type": "branch", "name": "main",
                                      "target": {"type": "commit", "hash": "d3adb33fcafe0123456789abcdef012345678901"}},
                              "old": {"type": "branch", "name": "main",
                                      "target": {"type": "commit", "hash": "0123456789abcdef0123456789abcdef01234567"}},
                              "created": False, "forced": False, "closed": False}]},
        "repository": {"type": "repository", "full_name": "acme/ankusa-demo",
                       "uuid": "{3f6e4c2a-9b1d-4e8f-a7c5-2d0b9e8f7a6c}"},
        "actor": {"type": "user", "display_name": "Dana Reyes"},
    })
    simple("bitbucket", "https://bitbucket.org/blog/enhanced-webhook-security",
           "bb-hook-secret-4c1e9f7a2d", "X-Hub-Signature",
           lambda s, b: "sha256=" + hexmac("sha256", s, b),
           {"Content-Type": "application/json", "X-Event-Key": "repo:push",
            "X-Request-UUID": "5e8f2a1c-7b3d-4e6f-9a0b-1c2d3e4f5a6b",
            "X-Hook-UUID": "9d8c7b6a-5f4e-3d2c-1b0a-9f8e7d6c5b4a", "X-Attempt-Number": "1"},
           body, "repo:push")


def pagerduty():
    secret = "Q2hhbmdlTWVQbGVhc2VQYWdlckR1dHlTZWNyZXQ="
    body = compact({"event": {
        "id": "01DEN8LA2KL6W0HTK4RV4ZJA1U", "event_type": "incident.triggered", "resource_type": "incident",
        "occurred_at": "2025-12-05T09:59:50.122Z",
        "agent": {"html_url": "https://acme.pagerduty.com/users/PLH1HKV", "id": "PLH1HKV",
                  "self": "https://api.pagerduty.com/users/PLH1HKV", "summary": "Tenex Engineer", "type": "user_reference"},
        "data": {"id": "PGR0VU2", "type": "incident", "number": 2, "status": "triggered",
                 "title": "A little bump in the road", "urgency": "high",
                 "service": {"id": "PF9KMXH", "summary": "API Service", "type": "service_reference"}}}})
    good = hexmac("sha256", secret, body)
    other = hexmac("sha256", OTHER, body)
    # Two v1 signatures, as during a rotation: the configured secret signs the second.
    h = {"Content-Type": "application/json", "User-Agent": "PagerDuty-Webhook/V3.0",
         "X-Webhook-Id": "c8d42e0a-3b5f-4a1c-9e7d-6f2b1a0c9d8e",
         "X-PagerDuty-Signature": "v1=%s,v1=%s" % (other, good)}
    neg = [neg_missing(h, "X-PagerDuty-Signature", body),
           neg_other(h, "X-PagerDuty-Signature", "v1=" + other, body)]
    V.append(vector("pagerduty", "https://developer.pagerduty.com/docs/webhooks/webhook-signatures/",
                    secret, 1764928800, h, body, "incident.triggered", neg))


def twitch():
    secret = "s3cRe7-tw1tch-eventsub-2025x"
    msg_id = "e76c6bd4-55c9-4987-8304-da1588d8988b"
    ts = "2025-12-05T09:59:50.634234626Z"
    body = compact({
        "subscription": {"id": "f1c2a387-161a-49f9-a165-0f21d7a4e1c4", "status": "enabled",
                         "type": "channel.follow", "version": "2",
                         "condition": {"broadcaster_user_id": "1337", "moderator_user_id": "1337"},
                         "transport": {"method": "webhook", "callback": "https://hooks.example.com/in/twitch"},
                         "created_at": "2025-12-01T10:00:00.634234626Z", "cost": 0},
        "event": {"user_id": "1234", "user_login": "cool_user", "user_name": "Cool_User",
                  "broadcaster_user_id": "1337", "broadcaster_user_login": "cooler_user",
                  "broadcaster_user_name": "Cooler_User", "followed_at": "2025-12-05T09:59:49.511Z"},
    })
    sig = "sha256=" + hexmac("sha256", secret, msg_id + ts + body)
    h = {"Content-Type": "application/json", "Twitch-Eventsub-Message-Id": msg_id,
         "Twitch-Eventsub-Message-Retry": "0", "Twitch-Eventsub-Message-Type": "notification",
         "Twitch-Eventsub-Message-Signature": sig, "Twitch-Eventsub-Message-Timestamp": ts,
         "Twitch-Eventsub-Subscription-Type": "channel.follow", "Twitch-Eventsub-Subscription-Version": "2"}
    neg = [neg_missing(h, "Twitch-Eventsub-Message-Signature", body),
           neg_other(h, "Twitch-Eventsub-Message-Signature",
                     "sha256=" + hexmac("sha256", OTHER, msg_id + ts + body), body),
           {"name": "message id changed", "headers": {"Twitch-Eventsub-Message-Id": "e76c6bd4-55c9-4987-8304-da1588d8988c"},
            "err": "mismatch"}]
    V.append(vector("twitch", "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/",
                    secret, rfc3339_epoch(ts) + 1, h, body, "channel.follow", neg))


def xero():
    body = compact({
        "events": [{"resourceUrl": "https://api.xero.com/api.xro/2.0/Invoices/717f2bfc-c6d4-41fd-b238-3f2f0c0cf777",
                    "resourceId": "717f2bfc-c6d4-41fd-b238-3f2f0c0cf777",
                    "eventDateUtc": "2025-12-05T09:59:47.123", "eventType": "UPDATE",
                    "eventCategory": "INVOICE", "tenantId": "c2cc9b6e-9458-4c7d-93cc-f02b81b0594f",
                    "tenantType": "ORGANISATION"}],
        "firstEventSequence": 1, "lastEventSequence": 1, "entropy": "S0m3r4Nd0mt3xt",
    })
    simple("xero", "https://developer.xero.com/documentation/webhooks/configuring-your-server",
           "OSd0eLlVIY9ZhViEqlDUh4+6n6M+Lo+eDaEJheJ6OCCgWwIz2D3JIAU6jPMipHRbgKTLz2uJ+xiACXGDBLrgdA==",
           "x-xero-signature", lambda s, b: b64mac("sha256", s, b),
           {"Content-Type": "application/json"}, body, "UPDATE")


def woocommerce():
    body = compact({
        "id": 727, "parent_id": 0, "status": "processing", "currency": "EUR", "version": "9.4.2",
        "date_created": "2025-12-05T10:59:48", "total": "29.35", "customer_id": 26,
        "billing": {"first_name": "John", "last_name": "Doe", "email": "john.doe@example.com", "country": "DE"},
        "line_items": [{"id": 315, "name": "Woo Single #1", "product_id": 93, "quantity": 2, "total": "6.00"}],
    })
    simple("woocommerce", "https://developer.woocommerce.com/docs/apis/rest-api/v3/webhooks/",
           "wc-3b9f2e7d1c4a8f6e0d5b2a9c7e1f4d8b", "X-WC-Webhook-Signature",
           lambda s, b: b64mac("sha256", s, b),
           {"Content-Type": "application/json", "User-Agent": "WooCommerce/9.4.2 Hookshot (WordPress/6.7.1)",
            "X-WC-Webhook-Source": "https://shop.example.com/", "X-WC-Webhook-Topic": "order.created",
            "X-WC-Webhook-Resource": "order", "X-WC-Webhook-Event": "created", "X-WC-Webhook-ID": "14",
            "X-WC-Webhook-Delivery-ID": "3f0a2c8e5b7d9e1f"},
           body, "order.created")


def coinbase():
    body = compact({
        "attempt_number": 1,
        "event": {"api_version": "2018-03-22", "created_at": "2025-12-05T09:59:49Z",
                  "id": "24934862-d980-46cb-9402-43c81b0cdba6", "resource": "event", "type": "charge:confirmed",
                  "data": {"code": "66BEOV2A", "name": "The Sovereign Individual", "pricing_type": "fixed_price",
                           "pricing": {"local": {"amount": "100.00", "currency": "USD"}}}},
        "id": 1, "scheduled_for": "2025-12-05T09:59:50Z",
    })
    simple("coinbase-commerce", "https://docs.cdp.coinbase.com/commerce/api-arcitecture/webhooks-security",
           "c0ffee-ccw-1b2c3d4e5f60718293a4b5c6d7e8f9", "X-CC-Webhook-Signature",
           lambda s, b: hexmac("sha256", s, b), {"Content-Type": "application/json"}, body, "charge:confirmed")


def okta():
    secret = "Bearer 4f7a1e9c-okta-event-hook-shared-secret"
    body = compact({
        "eventType": "com.okta.event_hook", "eventTypeVersion": "1.0", "cloudEventsVersion": "0.1",
        "source": "https://dev-123456.okta.com/api/v1/eventHooks/whoql0HfiLGPWc8Jx0g3",
        "eventId": "b5a188b9-5ece-4636-b041-482ffda96311", "eventTime": "2025-12-05T09:59:50.000Z",
        "contentType": "application/json",
        "data": {"events": [{"uuid": "79a2b3c4-d5e6-11f0-9a8b-7c6d5e4f3a2b", "published": "2025-12-05T09:59:49.761Z",
                             "eventType": "user.session.start", "version": "0", "severity": "INFO",
                             "displayMessage": "User login to Okta",
                             "actor": {"id": "00u1qw1mqitPHM8AJ0g7", "type": "User",
                                       "alternateId": "admin@example.com", "displayName": "Jo Admin"},
                             "outcome": {"result": "SUCCESS"}}]},
    })
    h = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "Okta-Integrations",
         "X-Okta-Request-Id": "XOZfPkReFFZ10KWyGkzAMwAAADA", "Authorization": secret}
    neg = [neg_missing(h, "Authorization", body),
           {"name": "another token", "headers": {"Authorization": "Bearer someone-elses-token"},
            "err": "mismatch"}]
    V.append(vector("okta", "https://developer.okta.com/use_cases/event_hooks", secret, 1764928800, h, body,
                    "user.session.start", neg))


def sentry():
    body = compact({
        "action": "created", "installation": {"uuid": "7a485448-a9e2-4c85-8a3c-4f44175783c9"},
        "data": {"issue": {"id": "1170820242", "shortId": "ACME-WEB-3", "title": "ZeroDivisionError: division by zero",
                           "culprit": "billing.views in invoice_total", "level": "error", "status": "unresolved",
                           "project": {"id": "1", "name": "acme-web", "slug": "acme-web"},
                           "firstSeen": "2025-12-05T09:59:41.520Z"}},
        "actor": {"type": "application", "id": "sentry", "name": "Sentry"},
    })
    simple("sentry", "https://docs.sentry.io/integrations/integration-platform/webhooks/",
           "7d2c9e5b1a4f8e3d6c0b9a7e5f2d1c4b8a6e3f0d9c2b5a8e7f1d4c3b6a9e0f2d", "Sentry-Hook-Signature",
           lambda s, b: hexmac("sha256", s, b),
           {"Content-Type": "application/json", "Request-ID": "9d8a1b2c-3e4f-5a6b-7c8d-9e0f1a2b3c4d",
            "Sentry-Hook-Resource": "issue", "Sentry-Hook-Timestamp": "1764928790"},
           body, "issue")


def mux():
    secret = "kmf3p2r9e8d7c6b5a4z3y2x1w0v9u8t7"
    ts = 1764928790
    body = compact({
        "type": "video.asset.ready", "id": "3a56ac3d-33da-4366-855b-f592d898409d",
        "created_at": "2025-12-05T09:59:49.000000Z",
        "object": {"type": "asset", "id": "0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002"},
        "environment": {"name": "Production", "id": "j0863n"},
        "data": {"id": "0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002", "status": "ready", "duration": 23.857167,
                 "playback_ids": [{"policy": "public", "id": "Ce19JV9Z8E02kaEIaM3fJNdN4NU02mCm01q"}]},
    })
    sig = "t=%d,v1=%s" % (ts, hexmac("sha256", secret, "%d.%s" % (ts, body)))
    h = {"Content-Type": "application/json", "Mux-Signature": sig}
    neg = [neg_missing(h, "Mux-Signature", body),
           neg_other(h, "Mux-Signature", "t=%d,v1=%s" % (ts, hexmac("sha256", OTHER, "%d.%s" % (ts, body))), body),
           {"name": "timestamp changed, signature kept",
            "headers": {"Mux-Signature": sig.replace("t=%d" % ts, "t=%d" % (ts - 1))},
            "err": "mismatch"}]
    V.append(vector("mux", "https://www.mux.com/docs/core/verify-webhook-signatures", secret, ts + 1, h, body,
                    "video.asset.ready", neg))


def lemonsqueezy():
    body = compact({
        "meta": {"event_name": "order_created", "custom_data": {"customer_id": 25}},
        "data": {"type": "orders", "id": "1",
                 "attributes": {"store_id": 1, "identifier": "636f855c-1fb9-4c07-b75c-3a10afef010a",
                                "order_number": 1, "user_email": "darlene@example.com", "currency": "USD",
                                "total": 1199, "status": "paid", "created_at": "2025-12-05T09:59:48.000000Z"}},
    })
    simple("lemonsqueezy", "https://docs.lemonsqueezy.com/help/webhooks/signing-requests",
           "lsq-Wh5ecret-9f2d7b", "X-Signature", lambda s, b: hexmac("sha256", s, b),
           {"Content-Type": "application/json", "X-Event-Name": "order_created"}, body, "order_created")


def razorpay():
    body = compact({
        "entity": "event", "account_id": "acc_BFQ7uQEaa7j2z7", "event": "payment.captured",
        "contains": ["payment"], "created_at": 1764928789,
        "payload": {"payment": {"entity": {"id": "pay_DESlfW9H8K9uqM", "entity": "payment", "amount": 100,
                                           "currency": "INR", "status": "captured", "order_id": "order_DESlLckIVRkHWj",
                                           "method": "upi", "captured": True, "email": "gaurav.kumar@example.com"}}},
    })
    simple("razorpay", "https://razorpay.com/docs/webhooks/validate-test/", "rzp-webhook-S3cr3t-2025",
           "X-Razorpay-Signature", lambda s, b: hexmac("sha256", s, b),
           {"Content-Type": "application/json", "x-razorpay-event-id": "ND8ZTtyHvBjrJY"}, body, "payment.captured")


def checkout():
    body = compact({
        "id": "evt_az5sblvku4ge3dwpztvyizgcau", "type": "payment_captured", "version": "1.0.0",
        "created_on": "2025-12-05T09:59:49Z",
        "data": {"id": "pay_waji4wxrhwruzjmpkfl2xn6ygq", "action_id": "act_y3oqhf46pyzuxjbcn2giaqnb44",
                 "amount": 6540, "currency": "GBP", "reference": "ORD-5023-4E89",
                 "processed_on": "2025-12-05T09:59:48Z", "response_code": "10000"},
        "_links": {"self": {"href": "https://api.checkout.com/workflows/events/evt_az5sblvku4ge3dwpztvyizgcau"}},
    })
    simple("checkout-com", "https://www.checkout.com/docs/workflows", "cko-wf-key-6f1d3b8a9c2e4d7f",
           "Cko-Signature", lambda s, b: hexmac("sha256", s, b),
           {"Content-Type": "application/json"}, body, "payment_captured")


def clickup():
    body = compact({
        "webhook_id": "7689a169-a000-4985-8676-6902b96d6627", "event": "taskCreated", "task_id": "86c0j2a7x",
        "history_items": [{"id": "2800763136717140857", "type": 1, "date": "1764928789713", "field": "status",
                           "after": {"status": "to do", "type": "open"}}],
    })
    simple("clickup", "https://developer.clickup.com/docs/webhooksignature",
           "0J2N4M8Q1P6R3S5T7U9V0W2X4Y6Z8A1B3C5D7E9F", "X-Signature", lambda s, b: hexmac("sha256", s, b),
           {"Content-Type": "application/json"}, body, "taskCreated")


def recurly():
    secret = "rcly-endpoint-key-0f9e8d7c6b5a"
    ts_ms = 1764928790123
    body = compact({
        "id": "pvjd8u3i0f7c", "object_type": "subscription", "site_id": "ovr6yapb6tp8",
        "event_type": "created", "event_time": "2025-12-05T09:59:50Z",
        "uuid": "5ec04b68bb5b8a2c2e8f4b6d9a1c3e5f", "account_code": "acct-1024",
    })
    good = hexmac("sha256", secret, "%d.%s" % (ts_ms, body))
    other = hexmac("sha256", OTHER, "%d.%s" % (ts_ms, body))
    h = {"Content-Type": "application/json", "recurly-signature": "%d,%s,%s" % (ts_ms, other, good)}
    neg = [neg_missing(h, "recurly-signature", body),
           neg_other(h, "recurly-signature", "%d,%s" % (ts_ms, other), body),
           {"name": "timestamp changed, signatures kept",
            "headers": {"recurly-signature": "%d,%s,%s" % (ts_ms - 1, other, good)},
            "err": "mismatch"}]
    V.append(vector("recurly", "https://docs.recurly.com/recurly-subscriptions/docs/signature-verification",
                    secret, ts_ms // 1000 + 1, h, body, None, neg))


def box():
    primary = "SamplePrimaryKey0000000000000000"
    secondary = "SampleSecondaryKey00000000000000"
    ts = "2025-12-05T01:59:50-08:00"
    body = compact({
        "type": "webhook_event", "id": "eac4a0a3-7c3f-4b1f-8d6e-2a9b8c7d6e5f", "created_at": "2025-12-05T01:59:49-08:00",
        "trigger": "FILE.UPLOADED",
        "webhook": {"id": "4161", "type": "webhook"},
        "created_by": {"type": "user", "id": "2030392653", "name": "Aaron Levie", "login": "ceo@example.com"},
        "source": {"id": "1444412906436", "type": "file", "name": "Q4 report.pdf",
                   "parent": {"type": "folder", "id": "176598776843", "name": "Reports"}},
    })
    h = {"Content-Type": "application/json; charset=UTF-8", "box-delivery-id": "462fc1b2-7bc5-4e50-a525-5a6a2f3a8e2c",
         "box-delivery-timestamp": ts, "box-signature-algorithm": "HmacSHA256", "box-signature-version": "1",
         "box-signature-primary": b64mac("sha256", primary, body + ts),
         "box-signature-secondary": b64mac("sha256", secondary, body + ts)}
    neg = [neg_missing(h, "box-signature-primary", body),
           neg_other(h, "box-signature-primary", b64mac("sha256", OTHER, body + ts), body),
           {"name": "delivery timestamp changed", "headers": {"box-delivery-timestamp": "2025-12-05T01:59:49-08:00"},
            "err": "mismatch"}]
    V.append(vector("box", "https://developer.box.com/guides/webhooks/v2/signatures-v2", primary,
                    rfc3339_epoch(ts) + 1, h, body, "FILE.UPLOADED", neg))


def dropbox():
    body = compact({"list_folder": {"accounts": ["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]},
                    "delta": {"users": [12345]}})
    simple("dropbox", "https://www.dropbox.com/developers/reference/webhooks", "g7xq2m9kz4w1v8b",
           "X-Dropbox-Signature", lambda s, b: hexmac("sha256", s, b),
           {"Content-Type": "application/json", "User-Agent": "DropboxWebhooks/1.0"}, body, None)


def asana():
    body = compact({"events": [{
        "user": {"gid": "1516", "resource_type": "user"},
        "created_at": "2025-12-05T09:59:49.143Z", "action": "changed",
        "resource": {"gid": "1337", "resource_type": "task", "resource_subtype": "default_task"},
        "parent": None, "change": {"field": "assignee", "action": "changed"}}]})
    simple("asana", "https://developers.asana.com/docs/webhooks-guide",
           "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81", "X-Hook-Signature",
           lambda s, b: hexmac("sha256", s, b), {"Content-Type": "application/json"}, body, None)


def notion():
    body = compact({
        "id": "367cba44-b6f3-4c92-81e7-6a2e9659efd4", "timestamp": "2025-12-05T09:59:48.000Z",
        "workspace_id": "13950b26-c203-4f3b-b97d-93ec06319565", "workspace_name": "Acme",
        "subscription_id": "29d75c0d-5546-4414-8459-7b7a92f1fc4b", "integration_id": "0ef2e755-4912-8096-91c1-00376a88a5ca",
        "type": "page.created", "authors": [{"id": "c7c11cca-1d73-471d-9b6e-bdef51470190", "type": "person"}],
        "attempt_number": 1, "entity": {"id": "153104cd-477e-809d-8dc4-ff2d96ae3090", "type": "page"},
        "data": {"parent": {"id": "13950b26-c203-4f3b-b97d-93ec06319565", "type": "space"}},
    })
    simple("notion", "https://developers.notion.com/reference/webhooks",
           "secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl", "X-Notion-Signature",
           lambda s, b: "sha256=" + hexmac("sha256", s, b),
           {"Content-Type": "application/json", "User-Agent": "notion-api"}, body, "page.created")


def zendesk():
    # Zendesk's static secret for test requests, as published on the page.
    secret = "dGhpc19zZWNyZXRfaXNfZm9yX3Rlc3Rpbmdfb25seQ=="
    ts = "2025-12-05T09:59:50Z"
    body = compact({
        "type": "zen:event-type:ticket.created", "account_id": 10001, "id": "cbe4028c-7239-495d-b020-f22348516046",
        "time": "2025-12-05T09:59:49.000Z", "zendesk_event_version": "2022-11-06", "subject": "zen:ticket:12",
        "detail": {"id": "12", "subject": "Printer on fire", "status": "NEW", "priority": "HIGH",
                   "requester_id": "366802638234", "via": {"channel": "web_form"}},
        "event": {},
    })
    sig = b64mac("sha256", secret, ts + body)
    h = {"Content-Type": "application/json; charset=utf-8", "x-zendesk-account-id": "10001",
         "x-zendesk-webhook-id": "01F1KRFQ6BG29CNWFR60NK5FNY", "x-zendesk-webhook-invocation-id": "8350205582",
         "X-Zendesk-Webhook-Signature": sig, "X-Zendesk-Webhook-Signature-Timestamp": ts}
    neg = [neg_missing(h, "X-Zendesk-Webhook-Signature", body),
           neg_other(h, "X-Zendesk-Webhook-Signature", b64mac("sha256", OTHER, ts + body), body),
           # The order Zendesk does not use: body, then timestamp.
           {"name": "signed body then timestamp",
            "headers": {"X-Zendesk-Webhook-Signature": b64mac("sha256", secret, body + ts)},
            "err": "mismatch"}]
    V.append(vector("zendesk", "https://developer.zendesk.com/documentation/webhooks/verifying/", secret,
                    rfc3339_epoch(ts) + 1, h, body, "zen:event-type:ticket.created", neg))


META_SECRET = "4a1f5e9c2b7d8e0f3a6c1b9d5e2f7a0c"


def meta_like(name, follows, body, event_type):
    # Meta sends (and signs) the payload with non-ASCII characters escaped.
    body = json.dumps(json.loads(body), separators=(",", ":"), ensure_ascii=True)
    simple(name, follows, META_SECRET, "X-Hub-Signature-256", lambda s, b: "sha256=" + hexmac("sha256", s, b),
           {"Content-Type": "application/json", "User-Agent": "facebookexternalua"}, body, event_type)
    # The GET handshake's hub.verify_token, which the meta handshake requires.
    V[-1]["verify"] = {"handshake_token": "meta-verify-token-7f3a"}


def meta():
    meta_like("meta", "https://developers.facebook.com/docs/graph-api/webhooks/getting-started/", compact({
        "object": "user",
        "entry": [{"id": "44444444", "uid": "44444444", "time": 1764928789, "changed_fields": ["photos"]}],
    }), "user")


def facebook():
    meta_like("facebook", "https://developers.facebook.com/docs/graph-api/webhooks/getting-started/", compact({
        "object": "page",
        "entry": [{"id": "106542811234567", "time": 1764928789, "changes": [{
            "field": "feed", "value": {"item": "comment", "verb": "add", "post_id": "106542811234567_122100000000000001",
                                       "comment_id": "122100000000000001_1234567890", "message": "Great news!",
                                       "from": {"id": "7423849182734", "name": "Sam Lee"}, "created_time": 1764928788}}]}],
    }), "feed")


def instagram():
    meta_like("instagram", "https://developers.facebook.com/docs/graph-api/webhooks/getting-started/", compact({
        "object": "instagram",
        "entry": [{"id": "17841405822304914", "time": 1764928789, "changes": [{
            "field": "comments", "value": {"id": "17865799348089039", "text": "Love this ✨",
                                           "from": {"id": "232323232", "username": "test_user"},
                                           "media": {"id": "123123123", "media_product_type": "FEED"}}}]}],
    }), "comments")


def whatsapp():
    meta_like("whatsapp",
              "https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/create-webhook-endpoint",
              compact({
                  "object": "whatsapp_business_account",
                  "entry": [{"id": "102290129340398", "changes": [{"field": "messages", "value": {
                      "messaging_product": "whatsapp",
                      "metadata": {"display_phone_number": "15550783881", "phone_number_id": "106540352242922"},
                      "contacts": [{"profile": {"name": "Sheena Nelson"}, "wa_id": "16505551234"}],
                      "messages": [{"from": "16505551234", "id": "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=",
                                    "timestamp": "1764928788", "type": "text", "text": {"body": "Does it come in another color?"}}]}}]}],
              }), "messages")


def chargebee():
    secret = "cb-hooks:9x2Lq7Vp4Tm1"
    body = compact({
        "id": "ev_16BPgETyVrQbiGhA", "occurred_at": 1764928789, "source": "admin_console", "user": "admin@acme.com",
        "object": "event", "api_version": "v2", "event_type": "subscription_created",
        "webhook_status": "scheduled",
        "content": {"subscription": {"id": "16BPgETyVrQVHGh1", "customer_id": "16BPgETyVrQVHGh1",
                                     "status": "active", "currency_code": "USD", "created_at": 1764928788}},
    })
    cred = "Basic " + base64.b64encode(secret.encode()).decode()
    h = {"Content-Type": "application/json", "User-Agent": "ChargeBee", "Authorization": cred}
    neg = [neg_missing(h, "Authorization", body),
           {"name": "wrong password", "headers": {"Authorization": "Basic " + base64.b64encode(b"cb-hooks:wrong-password").decode()},
            "err": "mismatch"}]
    V.append(vector("chargebee", "https://www.chargebee.com/docs/2.0/webhook_settings.html", secret, 1764928800, h,
                    body, "subscription_created", neg))


def coinify():
    # Coinify's published example, used exactly.
    body = '{"examplePayload":true}'
    secret = "my-shared-secret"
    sig = "bcdbb89e3031905f3cc1a20d16b5f969a17a7d8fa0c26e4a807c2193402d66f4"
    assert hexmac("sha256", secret, body) == sig
    h = {"Content-Type": "application/json", "X-Coinify-Webhook-Signature": sig}
    neg = [neg_missing(h, "X-Coinify-Webhook-Signature", body),
           neg_other(h, "X-Coinify-Webhook-Signature", hexmac("sha256", OTHER, body), body)]
    v = vector("coinify", "https://coinify.readme.io/docs/webhook-signature", secret, 1764928800, h, body, None, neg)
    v["origin"] = "published"
    V.append(v)


def datasaur():
    # Datasaur's published example, used exactly.
    body = '{"body":"sample"}'
    secret = "secret"
    sig = "0278b1a603de4c561ac0feb960354d0d00e8846b74813d81bddb43ad45bff767"
    assert hexmac("sha256", secret, body) == sig
    h = {"Content-Type": "application/json", "X-Datasaur-Signature": sig}
    neg = [neg_missing(h, "X-Datasaur-Signature", body),
           neg_other(h, "X-Datasaur-Signature", hexmac("sha256", OTHER, body), body)]
    v = vector("datasaur", "https://docs.datasaur.ai/integrations/webhook-notifications/webhook-signature", secret,
               1764928800, h, body, None, neg)
    v["origin"] = "published"
    V.append(v)


def surge():
    secret = "sk_whsec_01jjfe3n6x9q2w7r4t6y8u0i"
    ts = 1764928790
    body = compact({
        "type": "message.received", "id": "evt_01jjfeev3hf9n9c7k5231hd3hr", "account_id": "acct_01j9a43avnfqzbjfch6pygv1td",
        "timestamp": "2025-12-05T09:59:50Z",
        "data": {"id": "msg_01jjfeev2n8hx9kq7w3e0r4t5y", "body": "Are you open on Saturday?",
                 "conversation": {"id": "cnv_01jjfe9h5m3q8c2v7b4n1x6z0k",
                                  "contact": {"id": "ctc_01j9dy8mdzfn3r0e8x1tbdrdrf", "phone_number": "+18015551234"}}},
    })
    good = hexmac("sha256", secret, "%d.%s" % (ts, body))
    other = hexmac("sha256", OTHER, "%d.%s" % (ts, body))
    # Two v1 while credentials roll: the configured secret signs the second.
    sig = "t=%d,v1=%s,v1=%s" % (ts, other, good)
    h = {"Content-Type": "application/json", "Surge-Signature": sig}
    neg = [neg_missing(h, "Surge-Signature", body),
           neg_other(h, "Surge-Signature", "t=%d,v1=%s" % (ts, other), body),
           {"name": "timestamp changed, signatures kept",
            "headers": {"Surge-Signature": sig.replace("t=%d" % ts, "t=%d" % (ts - 1))}, "err": "mismatch"}]
    V.append(vector("surge", "https://docs.surge.app/api-reference/webhooks/signature-validation", secret, ts + 1, h,
                    body, "message.received", neg))


def documenso():
    secret = "dcs-whk-9QmR2vX7tL4pK8nB"
    body = compact({
        "event": "DOCUMENT_COMPLETED",
        "payload": {"id": 10, "externalId": None, "userId": 1, "title": "Contract.pdf", "status": "COMPLETED",
                    "completedAt": "2025-12-05T09:59:49.000Z",
                    "recipients": [{"id": 52, "email": "signer@example.com", "name": "Alex Doe", "role": "SIGNER",
                                    "signingStatus": "SIGNED"}]},
        "createdAt": "2025-12-05T09:59:50.000Z", "webhookEndpoint": "https://hooks.example.com/in/documenso",
    })
    h = {"Content-Type": "application/json", "X-Documenso-Secret": secret}
    neg = [neg_missing(h, "X-Documenso-Secret", body),
           {"name": "another secret", "headers": {"X-Documenso-Secret": "someone-elses-secret"}, "err": "mismatch"}]
    V.append(vector("documenso", "https://docs.documenso.com/docs/developers/webhooks/verification", secret,
                    1764928800, h, body, "DOCUMENT_COMPLETED", neg))


def sanity():
    secret = "sanity-wh-secret-4Yp9Qm2Lx7"
    ts_ms = 1764928790512
    body = compact({"_id": "drafts.post-42", "_type": "post", "_rev": "Fw3kqYbX9tQ1nR5mZ7vC2a",
                    "title": "Launch notes", "slug": {"_type": "slug", "current": "launch-notes"},
                    "_updatedAt": "2025-12-05T09:59:50Z"})
    mac_ = base64.urlsafe_b64encode(mac("sha256", secret, "%d.%s" % (ts_ms, body))).decode().rstrip("=")
    sig = "t=%d,v1=%s" % (ts_ms, mac_)
    other = base64.urlsafe_b64encode(mac("sha256", OTHER, "%d.%s" % (ts_ms, body))).decode().rstrip("=")
    h = {"Content-Type": "application/json", "sanity-webhook-signature": sig,
         "sanity-operation": "update", "sanity-document-id": "drafts.post-42"}
    neg = [neg_missing(h, "sanity-webhook-signature", body),
           neg_other(h, "sanity-webhook-signature", "t=%d,v1=%s" % (ts_ms, other), body),
           {"name": "timestamp changed, signature kept",
            "headers": {"sanity-webhook-signature": sig.replace("t=%d" % ts_ms, "t=%d" % (ts_ms - 1))},
            "err": "mismatch"}]
    V.append(vector("sanity", "https://github.com/sanity-io/webhook-toolkit", secret, ts_ms // 1000 + 1, h, body,
                    None, neg))


def lusha():
    secret = "lusha-acct-whsec-7f3c9a1e"
    ts = 1764928790
    body = compact({"id": "evt_7d1c2b3a4e5f", "type": "contact.enriched", "createdAt": "2025-12-05T09:59:50Z",
                    "data": {"contactId": "c_51234", "firstName": "Alex", "lastName": "Doe",
                             "company": {"name": "Acme", "domain": "acme.com"}}})
    h = {"Content-Type": "application/json", "User-Agent": "Lusha-Webhooks/1.0", "X-Lusha-Timestamp": str(ts),
         "X-Lusha-Signature": hexmac("sha256", secret, "%d.%s" % (ts, body))}
    neg = [neg_missing(h, "X-Lusha-Signature", body),
           neg_other(h, "X-Lusha-Signature", hexmac("sha256", OTHER, "%d.%s" % (ts, body)), body),
           neg_header("timestamp header changed", "X-Lusha-Timestamp", str(ts - 1))]
    V.append(vector("lusha", "https://docs.lusha.com/webhooks/security", secret, ts + 1, h, body, None, neg))


BUILDERS = [paddle, zoom, linear, intercom, typeform, calendly, bitbucket, pagerduty, twitch, xero, woocommerce,
            coinbase, okta, sentry, mux, lemonsqueezy, razorpay, checkout, clickup, recurly, box, dropbox, asana,
            notion, zendesk, meta, facebook, instagram, whatsapp, chargebee, coinify, datasaur, surge, documenso, sanity, lusha]


# ---------------------------------------------------------------- output

def scalar(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return json.dumps(v, ensure_ascii=False)


def emit(v):
    out = ["# Generated by gen_a.py: do not edit; change the generator and run it."]
    for k in ("preset", "origin", "follows", "secret", "now", "method", "url"):
        out.append("%s: %s" % (k, scalar(v[k])))
    if v.get("verify"):
        out.append("verify:")
        for vk, vv in v["verify"].items():
            out.append("  %s: %s" % (vk, scalar(vv)))
    out.append("headers:")
    for hk, hv in v["headers"].items():
        out.append("  %s: %s" % (hk, scalar(hv)))
    out.append("body: %s" % scalar(v["body"]))
    if v.get("event_type") is not None:
        out.append("event_type: %s" % scalar(v["event_type"]))
    if v["negative"]:
        out.append("negative:")
        for n in v["negative"]:
            out.append("  - name: %s" % scalar(n["name"]))
            out.append("    headers:")
            for hk, hv in n["headers"].items():
                out.append("      %s: %s" % (hk, scalar(hv)))
            if "body" in n:
                out.append("    body: %s" % scalar(n["body"]))
            out.append("    err: %s" % n["err"])
    return "\n".join(out) + "\n"


def check():
    """Recomputes every MAC with openssl, a second implementation."""
    bad = 0
    for alg, key, msg, digest in MACS:
        r = subprocess.run(["openssl", "dgst", "-" + alg, "-mac", "HMAC", "-macopt", "hexkey:" + key.hex(), "-binary"],
                           input=msg, capture_output=True, check=True)
        if r.stdout != digest:
            bad += 1
            print("MISMATCH", alg, key, msg[:40], file=sys.stderr)
    print("openssl agrees on %d of %d MACs" % (len(MACS) - bad, len(MACS)))
    return bad == 0


def main():
    for b in BUILDERS:
        b()
    for v in V:
        with open(os.path.join(HERE, v["preset"] + ".yaml"), "w", encoding="utf-8") as f:
            f.write(emit(v))
    print("wrote %d vectors" % len(V))
    if "--check" in sys.argv and not check():
        sys.exit(1)


if __name__ == "__main__":
    main()
