package edge

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/verify"
)

// handshakeGET answers a GET that step 0 let through: a source whose
// preset has a GET handshake (Okta, Dropbox, Meta). It has no body, so
// nothing is reserved: step 6, then step 7's check, then the answer.
func (r *Router) handshakeGET(ctx *fasthttp.RequestCtx, a *admitted) {
	hs := a.src.Verifier.(verify.Handshaker)
	ans, ok := hs.HandshakeGET(&ctx.Request.Header, time.Unix(0, r.o.Now()))
	if !ok {
		// Not the handshake (a GET without its challenge): the same 405
		// as any GET.
		reply(ctx, vMethod, true)
		return
	}
	if r.o.Closed.IsClosed(s2b(a.tenant)) {
		tenantErasing.Inc()
		reply(ctx, vTenantErasing, false)
		return
	}
	if r.o.Tenants != nil {
		if ok, wait := r.o.Tenants.Check(a.tenant); !ok {
			countHandshake(ans.Kind, hsRateLimited)
			replyWait(ctx, vRateLimited, wait, false)
			return
		}
	}
	r.answerHandshake(ctx, a, ans)
}

// answerHandshake answers a subscription handshake, GET or POST, once it
// is known to be one: it spends the tenant's token when the handshake
// proved itself (Verified), else a token of the source's quarantine
// bucket, as a hook would; an empty bucket is the hook's 429. A refusal
// (Discord's forged PING, Xero's badly signed intent to receive: 401)
// spends neither, as a refused hook of a reject source does not: those
// providers check that a forgery gets its 401, and a flood of forgeries
// must not turn it into a 429. Nothing is committed or delivered;
// Handle's finish gives back what the request reserved.
func (r *Router) answerHandshake(ctx *fasthttp.RequestCtx, a *admitted, ans verify.Answer) {
	if ans.Status < 400 && !r.spendHandshake(ctx, a, ans) {
		return
	}
	ctx.Response.SetStatusCode(ans.Status)
	if ans.ContentType != "" {
		ctx.Response.Header.SetContentType(ans.ContentType)
	}
	if ans.Header[0] != "" {
		ctx.Response.Header.Set(ans.Header[0], ans.Header[1])
	}
	ctx.Response.SetBody(ans.Body)
	countStatus(ans.Status)
	if ans.Status >= 400 {
		countHandshake(ans.Kind, hsRefused)
		if r.hsThrottle.allow() {
			r.o.Logger.Warn("subscription handshake refused: its signature or token does not verify",
				zap.String("kind", ans.Kind), zap.String("source", a.src.Name), zap.String("tenant", a.tenant), zap.Int("status", ans.Status))
		}
		return
	}
	countHandshake(ans.Kind, hsAnswered)
	if ans.Kind == "asana" && !ans.Verified && r.hookSecretThrottle.allow() {
		// The handshake is unauthenticated: anyone may send one, so the
		// line says whose it is and asks the operator to configure the
		// secret only if the webhook is theirs. It names the secret by
		// a fingerprint, never the secret: Asana also returns it in its
		// answer to the POST /webhooks that created the webhook
		// (developers.asana.com/reference/createwebhook), which is where
		// the operator copies it from; the fingerprint tells them it is
		// the same one. The node does not adopt it; the subscription's
		// events fail verification until it is configured.
		addr := remoteAddr(ctx)
		// The handshake comes from Asana's servers while its API creates
		// the webhook, so addr is the sender to check, not the creator.
		r.o.Logger.Warn("asana handshake answered, unauthenticated (anyone can send one): its X-Hook-Secret is not one of this source's secrets. "+
			"If and only if you created an Asana webhook for this source just now and its handshake came from "+addr+", configure the X-Hook-Secret that Asana's answer to your POST /webhooks returned "+
			"(its SHA-256 begins with x_hook_secret_sha256) as verify.secret (or add it to verify.secrets); until then that webhook's events fail verification",
			zap.String("source", a.src.Name), zap.String("tenant", a.tenant), zap.String("remote_addr", addr), zap.String("x_hook_secret_sha256", fingerprint(ans.Header[1])))
	}
}

// fingerprint names a secret in a log line without giving it away: the
// first 16 hex digits of its SHA-256 (`printf %s SECRET | sha256sum`
// shows the same).
func fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:8])
}

// spendHandshake takes the token an answered handshake costs: the
// tenant's when it proved itself, else one of the source's quarantine
// bucket. false: the bucket is empty and the 429 is given.
func (r *Router) spendHandshake(ctx *fasthttp.RequestCtx, a *admitted, ans verify.Answer) bool {
	if ans.Verified {
		if r.o.Tenants != nil {
			if ok, wait := r.o.Tenants.Take(a.tenant); !ok {
				countHandshake(ans.Kind, hsRateLimited)
				replyWait(ctx, vRateLimited, wait, false)
				return false
			}
		}
		return true
	}
	if ok, wait := r.quarantineBucket(a.src).Take(r.o.Mono()); !ok {
		quarantineLimited.Inc()
		countHandshake(ans.Kind, hsRateLimited)
		replyWait(ctx, vQuarantineLimited, wait, false)
		return false
	}
	return true
}

// remoteAddr is the request's client address (the PROXY protocol's, when
// the listener reads one), for a log line.
func remoteAddr(ctx *fasthttp.RequestCtx) string {
	if a := clientAddr(ctx); a != "" {
		return a
	}
	return ctx.RemoteAddr().String()
}

// end appends the envelope's last fields (held.end), reading the hook's
// event type when its source's verifier knows where it is. A source
// without one pays a type assertion.
func (r *Router) end(ctx *fasthttp.RequestCtx, a *admitted, hold *held, body []byte, dedupeKey string) {
	et, ok := a.src.Verifier.(verify.EventTyper)
	if !ok {
		hold.end(dedupeKey, "")
		return
	}
	// A pooled buffer: one on the stack would escape through the
	// interface call and cost every such hook an allocation.
	buf := eventTypeBufs.Get().(*[verify.MaxEventTypeBytes]byte)
	t := et.AppendEventType(buf[:0], &ctx.Request.Header, body)
	hold.end(dedupeKey, b2s(t)) // copied into the record at once
	eventTypeBufs.Put(buf)
}

var eventTypeBufs = sync.Pool{New: func() any { return new([verify.MaxEventTypeBytes]byte) }}
