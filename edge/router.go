package edge

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
	"github.com/ankusa/ankusa/verify"
	"github.com/ankusa/ankusa/wal"
)

// Committer makes a record durable; *wal.WAL is the production one.
type Committer interface {
	Commit(r *wal.Request) error
}

// Options configure a Router.
type Options struct {
	Resolver Resolver
	Sources  source.Store
	WAL      Committer
	Limits   config.Limits
	// RoutesEnabled turns on the route guard (routes.enabled).
	RoutesEnabled bool
	Logger        *zap.Logger
	// Now returns the receive time in unix nanoseconds (default: the clock).
	Now func() int64
	// Mono is a monotonic clock in nanoseconds for token buckets (default:
	// time since the router was made).
	Mono func() int64
	// Pen is the quarantine pen (nil: a source that quarantines answers
	// 503 for a hook that failed verification).
	Pen Pen
	// Dedupe is router step 13 (nil: sources' dedupe keys are not
	// checked).
	Dedupe *dedupe.Stage
	// Tenants are the tenants' token buckets, checked at step 7 and
	// debited at step 12 (nil: no tenant is limited).
	Tenants RateLimiter
	// Queues are the tenants' queue caps, step 8 (nil: none).
	Queues *tenant.Queues
	// TenantKnown reports whether a tenant has an ordinal, TenantsFull
	// whether tenants.max ordinals exist (step 10; nil: no limit). The
	// commit loop enforces the cap too (wal.ErrTenantLimit): this check
	// only spares reading the body of a hook that would be refused.
	TenantKnown func(tenant string) bool
	TenantsFull func() bool
	// NewTenants bounds how fast tenants are created, node-wide (nil: no
	// bound).
	NewTenants *tenant.Bucket
	// Closed are the tenants being erased (step 6): their hooks are 503
	// tenant_erasing before any token, cap or pen is asked (nil: none).
	// The erase job closes a tenant in it first and opens it again once
	// the tenant is erased (a tenant that sends again is a new tenant).
	Closed *tenant.Closed
}

// RateLimiter decides from a tenant's token bucket (tenant.Limiter on the
// node, tenant.FleetLimiter shared through Redis).
type RateLimiter interface {
	// Check reports whether a token is there, taking none (step 7).
	Check(tenant string) (ok bool, wait time.Duration)
	// Take takes one (step 12, once the hook verified).
	Take(tenant string) (ok bool, wait time.Duration)
}

// Pen is what the edge asks of the quarantine pen (*dispatch.Dispatcher
// is the production one).
type Pen interface {
	// ReservePen takes n bytes of the pen's cap for a hook of tenant
	// (ok); closed: the pen refuses the tenant, which is being erased;
	// neither: the pen holds limits.max_quarantine_bytes.
	ReservePen(tenant string, n int64) (ok, closed bool)
	// UnreservePen gives back a reservation whose hook was not committed.
	UnreservePen(n int64)
}

// Router is the catch-all POST handler of the public listener. It runs the
// router order of DESIGN.md §2.1; every check that needs no body runs in
// HeaderReceived, before fasthttp reads a body byte.
type Router struct {
	o            Options
	maxBody      int64
	maxHeader    int
	maxHdrCount  int
	maxPipeline  int64
	pipeline     atomic.Int64
	hooked       atomic.Bool // HeaderReceived runs before Handle (NewServer)
	logThrottler throttle
	// hsThrottle and hookSecretThrottle pace the log lines of refused
	// handshakes and of Asana secrets the source does not have.
	hsThrottle         throttle
	hookSecretThrottle throttle
	qbuckets           sync.Map // source name → *quarantineBucket
}

// quarantineBucket is a source's quarantine bucket with the spec it was
// made from: buckets outlive snapshots, so a source edit keeps what the
// bucket holds and only changes its rate.
type quarantineBucket struct {
	b    *tenant.Bucket
	mu   sync.Mutex // guards spec
	spec config.Quarantine
}

// quarantineBucket returns the source's bucket, made or reconfigured to its
// current spec.
func (r *Router) quarantineBucket(src *source.Source) *tenant.Bucket {
	spec := config.Quarantine{Rate: config.DefaultQuarantineRate, Burst: config.DefaultQuarantineBurst}
	if src.Spec.Quarantine != nil {
		spec = *src.Spec.Quarantine
	}
	now := r.o.Mono()
	if v, ok := r.qbuckets.Load(src.Name); ok {
		qb := v.(*quarantineBucket)
		qb.mu.Lock()
		if qb.spec != spec {
			qb.b.Reconfigure(spec.Rate, spec.Burst, now)
			qb.spec = spec
		}
		qb.mu.Unlock()
		return qb.b
	}
	v, _ := r.qbuckets.LoadOrStore(src.Name, &quarantineBucket{b: tenant.NewBucket(spec.Rate, spec.Burst, now), spec: spec})
	return v.(*quarantineBucket).b
}

// NewRouter returns a router.
func NewRouter(o Options) *Router {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = func() int64 { return time.Now().UnixNano() }
	}
	if o.Mono == nil {
		start := time.Now()
		o.Mono = func() int64 { return int64(time.Since(start)) }
	}
	r := &Router{
		o:           o,
		maxBody:     int64(o.Limits.MaxBodyBytes),
		maxHeader:   int(o.Limits.MaxHeaderBytes),
		maxHdrCount: o.Limits.MaxHeaderCount,
		maxPipeline: int64(o.Limits.MaxPipelineBytes),
	}
	return r
}

// PipelineBytes is what the node has admitted and not yet committed or
// released (router step 9).
func (r *Router) PipelineBytes() int64 { return r.pipeline.Load() }

// admitted is what the pre-body checks decided for an accepted request.
type admitted struct {
	route     Route
	src       *source.Source
	tenant    string
	limit     int64 // body bound for this request
	newTenant bool  // the tenant has no ordinal yet (step 10)
	// get: a GET to a source whose preset has a GET handshake (the only
	// GET that gets past step 0).
	get bool
}

// check runs router steps 0-5: everything decided from the request line and
// headers. It allocates nothing.
//
// With headersChecked, the header bounds and validity (step 5), which
// depend on nothing but the request and were checked in HeaderReceived,
// are not checked again.
func (r *Router) check(h *fasthttp.RequestHeader, a *admitted, headersChecked bool) verdict {
	// 0. method
	if !h.IsPost() {
		return r.checkGET(h, a, headersChecked)
	}
	return r.resolve(h, a, headersChecked)
}

// checkGET is step 0 for a request that is not a POST: a GET goes on only
// to a source whose verifier answers a GET handshake, and only without a
// body. Every other outcome, an unknown URL among them, is the same 405 a
// GET has always had, so a probe cannot tell which sources exist (except,
// unavoidably, those with a GET handshake).
func (r *Router) checkGET(h *fasthttp.RequestHeader, a *admitted, headersChecked bool) verdict {
	if !h.IsGet() {
		return vMethod
	}
	if cl := h.ContentLength(); cl != 0 && cl != -2 {
		return vMethod
	}
	if r.resolve(h, a, headersChecked) != vOK {
		*a = admitted{}
		return vMethod
	}
	if hs, ok := a.src.Verifier.(verify.Handshaker); !ok || !hs.AcceptsGET() {
		*a = admitted{}
		return vMethod
	}
	a.get = true
	return vOK
}

// resolve runs router steps 1-5 for a request step 0 let through.
func (r *Router) resolve(h *fasthttp.RequestHeader, a *admitted, headersChecked bool) verdict {
	snap := r.o.Sources.Snapshot()
	// 1. route guard: a route of the table matches host and path, or the
	// resolver found the request's route itself (a token's)
	var guardParams Params
	guard, guarded := r.routeGuard(h, snap, &guardParams)
	// 2. resolver (a registered one may be any code: its names are held to
	// the same rule as the shipped ones', since they end up in keys and paths)
	route, ok := r.o.Resolver.Resolve(h, snap)
	if !guarded && ok && route.Via != nil {
		guard, guarded = route.Via, true
	}
	if !guarded || !ok || route.TenantID != "" && !config.ValidName(s2b(route.TenantID)) {
		return vNotFound
	}
	for i := 0; i < guardParams.Len(); i++ {
		if !route.Params.Set(guardParams.At(i)) {
			return vNotFound
		}
	}
	// 3. declared length against the node's bound
	cl := h.ContentLength()
	if int64(cl) > r.maxBody {
		return vTooLarge
	}
	// 4. source lookup in the snapshot, tenant and route binding
	src := snap.Lookup(s2b(route.SourceID))
	if src == nil {
		return vNotFound
	}
	tenant, found := resolveTenant(route.TenantID, src, guard)
	if !found {
		return vNotFound
	}
	if int64(cl) > src.MaxBodyBytes {
		return vTooLarge
	}
	// 5. header bounds and validity
	if !headersChecked {
		if v := r.checkHeaders(h); v != vOK {
			return v
		}
		// fasthttp drops "Transfer-Encoding: identity" and frames the
		// request as bodiless (ContentLength -2): the body would be parsed
		// as the next request. RFC 9112 §6.3: a Transfer-Encoding not
		// ending in chunked is a 400.
		if cl == -2 && hasTransferEncoding(h) {
			return vInvalidHeader
		}
	}
	a.route, a.src, a.tenant, a.limit = route, src, tenant, src.MaxBodyBytes
	return vOK
}

// routeGuard runs router step 1 when routes.enabled: a route of snap must
// match host and path; the parameters it binds are set in params. ok false
// is a 404; with the guard off, the route is nil and ok true.
func (r *Router) routeGuard(h *fasthttp.RequestHeader, snap *source.Snapshot, params *Params) (guard *source.Route, ok bool) {
	if !r.o.RoutesEnabled {
		return nil, true
	}
	var segs Segments
	if !SplitPath(h.RequestURI(), &segs) {
		return nil, false
	}
	guard = snap.MatchRoute(h.Host(), segs.s[:segs.n], func(name string, value []byte) {
		params.Set(name, b2s(value))
	})
	return guard, guard != nil
}

// resolveTenant applies the seed's resolution order and bindings: the
// resolver's tenant wins, else the source's; a tenant's own source answers
// only that tenant; a route owned by a tenant must agree with both, and
// names the tenant of a shared source whose URL carries none. Every
// disagreement is the same 404.
func resolveTenant(urlTenant string, src *source.Source, guard *source.Route) (string, bool) {
	if guard != nil {
		if guard.SourceID != "" && guard.SourceID != src.Name {
			return "", false
		}
		if !guard.Shared() {
			if urlTenant != "" && urlTenant != guard.TenantID {
				return "", false
			}
			if !src.Shared && src.TenantID != guard.TenantID {
				return "", false
			}
			return guard.TenantID, true
		}
	}
	switch {
	case !src.Shared && urlTenant != "" && urlTenant != src.TenantID:
		return "", false
	case urlTenant == "":
		return src.TenantID, true
	}
	return urlTenant, true
}

// checkHeaders bounds the header block and refuses malformed fields, an
// obsolete line fold among them (see rawheaders.go). It reads the fields
// as they arrived, which is what the envelope stores.
func (r *Router) checkHeaders(h *fasthttp.RequestHeader) verdict {
	raw := h.RawHeaders()
	if len(raw) > r.maxHeader {
		return vInvalidHeader
	}
	n := 0
	for rest := raw; ; n++ {
		if line, _ := cutLine(rest); isFold(line) {
			return vInvalidHeader
		}
		k, v, next, ok := nextField(rest)
		if !ok {
			break
		}
		if !validHeaderName(k) || !validHeaderValue(v) {
			return vInvalidHeader
		}
		rest = next
	}
	if n > r.maxHdrCount {
		return vInvalidHeader
	}
	return vOK
}

// tokenChar marks the bytes a header name (an RFC 9110 token) may hold;
// valueChar those a field value may hold (visible ASCII, space, tab and
// obs-text).
var tokenChar, valueChar = func() (t, v [256]bool) {
	for c := 0; c < 256; c++ {
		v[c] = c >= ' ' && c != 0x7f || c == '\t'
		t[c] = c > ' ' && c < 0x7f && !strings.ContainsRune("\"(),/:;<=>?@[\\]{}", rune(c))
	}
	return t, v
}()

func validHeaderName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tokenChar[c] {
			return false
		}
	}
	return true
}

func validHeaderValue(b []byte) bool {
	for _, c := range b {
		if !valueChar[c] {
			return false
		}
	}
	return true
}

// hasTransferEncoding reports whether the raw header block has a
// Transfer-Encoding field; only the raw block shows one fasthttp dropped.
// It runs only for requests with no body framing, never on the hot path.
func hasTransferEncoding(h *fasthttp.RequestHeader) bool {
	for k := range h.AllInOrder() {
		if strings.EqualFold(b2s(k), fasthttp.HeaderTransferEncoding) {
			return true
		}
	}
	return false
}

// HeaderReceived is fasthttp's hook, run after the header block and before
// any body byte is read. A request refused here has its Content-Length set
// to 0 (and Expect dropped), so fasthttp reads none of its body; the
// handler then answers with Connection: close.
func (r *Router) HeaderReceived(h *fasthttp.RequestHeader) (rc fasthttp.RequestConfig) {
	h.Del(verdictHeader)
	defer func() {
		if p := recover(); p != nil {
			r.recovered(p)
			h.Set(verdictHeader, verdictValues[vUnavailable])
			h.SetContentLength(0)
			h.Del(fasthttp.HeaderExpect)
			rc = fasthttp.RequestConfig{}
		}
	}()
	var a admitted
	v := r.check(h, &a, false)
	if v != vOK {
		h.Set(verdictHeader, verdictValues[v])
		h.SetContentLength(0)
		h.Del(fasthttp.HeaderExpect)
		return fasthttp.RequestConfig{}
	}
	return fasthttp.RequestConfig{MaxRequestBodySize: int(a.limit)}
}

// Handle answers one request.
func (r *Router) Handle(ctx *fasthttp.RequestCtx) {
	h := &ctx.Request.Header
	if early := h.Peek(verdictHeader); len(early) == 1 && early[0] > '0' && early[0] < '0'+byte(numVerdicts) {
		reply(ctx, verdict(early[0]-'0'), true)
		return
	}
	// What the request reserves, given back on every way out, a panic
	// included (finish).
	var hold held
	defer r.finish(ctx, &hold)
	var a admitted
	// HeaderReceived ran the same checks on these headers; with the hook
	// installed (NewServer) only what the handler needs is done again:
	// the route, the source and the tenant, against the current snapshot.
	if v := r.check(h, &a, r.hooked.Load()); v != vOK {
		reply(ctx, v, true)
		return
	}
	if a.get {
		r.handshakeGET(ctx, &a)
		return
	}
	if v, wait := r.admit(h, &a, &hold); v != vOK {
		replyWait(ctx, v, wait, true)
		return
	}
	r.ingest(ctx, &a, &hold)
}

// finish is Handle's deferred end. A panic on the request path (a
// registered resolver or verifier is any code) must not take the node
// down: the request is answered 503 and the panic logged; nothing is
// acknowledged that was not committed. Then what the request holds is
// given back, panic or not.
func (r *Router) finish(ctx *fasthttp.RequestCtx, hold *held) {
	p := recover()
	if p != nil {
		r.recovered(p)
		ctx.Response.Reset()
		reply(ctx, vUnavailable, true)
	}
	r.release(ctx, hold, p != nil)
}

// admit runs router steps 6-10 for a request check accepted, recording
// what it reserves in hold. A verdict other than vOK is the answer, given
// before any body byte is read, with wait its Retry-After.
func (r *Router) admit(h *fasthttp.RequestHeader, a *admitted, hold *held) (verdict, time.Duration) {
	// 6. tenant being erased: refused before it costs a token or a
	// reservation (a lock-free lookup, no allocation).
	if r.o.Closed.IsClosed(s2b(a.tenant)) {
		tenantErasing.Inc()
		return vTenantErasing, 0
	}
	// 7. the tenant's token bucket has a token (taken at step 12, once
	// the hook passed verification).
	if r.o.Tenants != nil {
		if ok, wait := r.o.Tenants.Check(a.tenant); !ok {
			return vRateLimited, wait
		}
	}
	if v, wait := r.reserve(h, a, hold); v != vOK {
		return v, wait
	}
	// 10. a new tenant: none past tenants.max, and not faster than the
	// node creates tenants (the token is taken just before the commit).
	a.newTenant = r.o.TenantKnown != nil && !r.o.TenantKnown(a.tenant)
	if a.newTenant {
		if r.o.TenantsFull() {
			return vTenantLimit, 0
		}
		if b := r.o.NewTenants; b != nil {
			if ok, wait := b.Peek(r.o.Mono()); !ok {
				return vNewTenantsLimited, wait
			}
		}
	}
	return vOK, 0
}

// reserve runs router steps 8 and 9. What the request will cost the
// pipeline until it is committed (its declared length, the bound of a
// chunked one, and its header block) is reserved against the tenant's
// queue caps and the node's bound, and recorded in hold.
func (r *Router) reserve(h *fasthttp.RequestHeader, a *admitted, hold *held) (verdict, time.Duration) {
	cost := int64(h.ContentLength())
	if cost < 0 {
		cost = a.limit // chunked: the bound
	}
	cost += int64(len(h.RawHeaders()))
	// 8. the tenant's queue caps; near the node's bound, also its share of
	// it, so the tenant holding the most is refused (429) before anyone
	// meets the 503.
	if q := r.o.Queues; q != nil {
		share := int64(0)
		if near := r.maxPipeline / 8 * 7; r.pipeline.Load()+cost > near {
			share = near / max(q.Active(), 1)
		}
		if !q.Reserve(a.tenant, cost, share) {
			return vTenantOverload, time.Second
		}
		hold.queues, hold.tenant, hold.queued = q, a.tenant, cost
		// Step 6 again, now that the hook is counted: an erase closes
		// the tenant, then waits for its queue to empty. A hook that
		// passed step 6 before the close is either counted here before
		// the erase reads the queue, or sees the close now.
		if r.o.Closed.IsClosed(s2b(a.tenant)) {
			tenantErasing.Inc()
			return vTenantErasing, 0
		}
	}
	// 9. node-wide pipeline bytes: past the node's own bound everyone
	// waits, 503.
	hold.pipeline = cost
	if r.pipeline.Add(cost) > r.maxPipeline {
		return vOverloaded, 0
	}
	return vOK, 0
}

// recovered reports a panic on the request path.
func (r *Router) recovered(p any) {
	panicsTotal.Inc()
	if r.logThrottler.allow() {
		r.o.Logger.Error("panic while handling a request", zap.Any("panic", p), zap.Stack("stack"))
	}
}
