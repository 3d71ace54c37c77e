package edge_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
	"github.com/ankusa/ankusa/wal"
)

// ingestConfig has a source for each way ingest can go: keyed (dedupe
// on a header), signed and keyed, signed and quarantining, signed and
// rejecting; behind a route that binds a parameter.
const ingestConfig = `node: {name: test}
` + limitsYAML + `route_resolver: {type: path, prefix: [webhooks]}
routes:
  enabled: true
  table:
    - {id: any, path: "/webhooks/:s"}
sources:
  keyed: {verify: {type: none}, dedupe: {key: 'header:X-Id', ttl: 1h}}
  signed: {verify: {type: github, secret: env:INGEST_SECRET}, dedupe: {key: 'header:X-Id', ttl: 1h}}
  pen: {verify: {type: github, secret: env:INGEST_SECRET}, on_verify_failure: quarantine}
  strict: {verify: {type: github, secret: env:INGEST_SECRET}}
`

// scriptWAL is a Committer that numbers a record, keeps a copy of its
// payload, and fails or panics when told to.
type scriptWAL struct {
	seq   uint64
	fail  error
	panic bool
	last  []byte
}

func (w *scriptWAL) Commit(r *wal.Request) error {
	if w.panic {
		panic("commit panics")
	}
	if w.fail != nil {
		return w.fail
	}
	w.seq++
	r.Seq, r.ID = w.seq, envelope.MakeID(1, 7, w.seq)
	w.last = bytes.Clone(r.Buf[wal.FrameHeaderSize:])
	return nil
}

// countingPen is a quarantine pen that counts what is reserved.
type countingPen struct {
	mu   sync.Mutex
	held int64
}

func (p *countingPen) ReservePen(_ string, n int64) (ok, closed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held += n
	return true, false
}

func (p *countingPen) UnreservePen(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held -= n
}

func (p *countingPen) reserved() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// ingestRig is ingestConfig's router, in process, with everything it
// reserves from observable.
type ingestRig struct {
	t      *testing.T
	router *edge.Router
	wal    *scriptWAL
	pen    *countingPen
	queues *tenant.Queues
}

func newIngestRig(t *testing.T) *ingestRig {
	t.Helper()
	t.Setenv("INGEST_SECRET", "s3cret")
	cfg, err := config.Load([]byte(ingestConfig), config.ValidateOptions{ResolverKnown: edge.ResolverKnown})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatal(err)
	}
	g := &ingestRig{t: t, wal: &scriptWAL{}, pen: &countingPen{}, queues: tenant.NewQueues(cfg.RateLimits)}
	g.router = edge.NewRouter(edge.Options{
		Resolver:      res,
		Sources:       source.NewStatic(cfg),
		WAL:           g.wal,
		Limits:        cfg.Limits,
		RoutesEnabled: cfg.Routes.Enabled,
		Now:           func() int64 { return 1_764_445_200_123_456_789 },
		Pen:           g.pen,
		// Node scope without a store: keys live in the guard, and a
		// committed one stays there (nothing is ever persisted).
		Dedupe: dedupe.NewNodeStage(nil, func() uint64 { return 0 }, nil),
		Queues: g.queues,
	})
	return g
}

// hook is one request to the rig.
type hook struct {
	source, id, sig string
	body            string
	short           int // bytes of the body left unsent
}

func sign(body string) string {
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// serve runs h through HeaderReceived and Handle, the body streamed, and
// returns the answer and the request's header fields as sent.
func (g *ingestRig) serve(h hook) (status int, body string, headers []envelope.Header) {
	g.t.Helper()
	head := "POST /webhooks/" + h.source + " HTTP/1.1\r\nHost: hooks.example.com\r\nContent-Type: application/json\r\n"
	if h.id != "" {
		head += "X-Id: " + h.id + "\r\n"
	}
	if h.sig != "" {
		head += "X-Hub-Signature-256: " + h.sig + "\r\n"
	}
	head += fmt.Sprintf("Content-Length: %d\r\n\r\n", len(h.body))
	var ctx fasthttp.RequestCtx
	fasthttpHeader(g.t, &ctx.Request.Header, []byte(head))
	// The fields as sent, in order: what the edge stores.
	for _, line := range strings.Split(strings.TrimSuffix(head, "\r\n\r\n"), "\r\n")[1:] {
		k, v, _ := strings.Cut(line, ": ")
		headers = append(headers, envelope.Header{Name: k, Value: v})
	}
	sent := h.body[:len(h.body)-h.short]
	ctx.Request.SetBodyStream(strings.NewReader(sent), len(h.body))
	g.router.HeaderReceived(&ctx.Request.Header)
	g.router.Handle(&ctx)
	return ctx.Response.StatusCode(), string(ctx.Response.Body()), headers
}

// TestEdgeEncodingIsAppendTo: the record the edge writes from views of the
// request is byte for byte what Envelope.AppendTo writes for the same hook
// (identity zero: the commit loop fills it in), for a keyed hook, a
// verified one and a quarantined one.
func TestEdgeEncodingIsAppendTo(t *testing.T) {
	g := newIngestRig(t)
	body := `{"id":"evt_1","amount":42}`
	for _, tc := range []struct {
		name     string
		hook     hook
		status   int
		verifier string
		v        envelope.Verification
		key      string
	}{
		{"keyed", hook{source: "keyed", id: "k1", body: body}, 201, "none", envelope.Verification{}, "k1"},
		{"verified", hook{source: "signed", id: "k2", sig: sign(body), body: body}, 201, "github",
			envelope.Verification{Verified: true}, "k2"},
		{"quarantined", hook{source: "pen", sig: "sha256=00", body: body}, 202, "github",
			envelope.Verification{Quarantined: true, Failure: envelope.FailMismatch}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, out, headers := g.serve(tc.hook)
			if st != tc.status {
				t.Fatalf("status %d, want %d: %s", st, tc.status, out)
			}
			v := tc.v
			v.Verifier = tc.verifier
			want := envelope.Envelope{
				TenantID:     "default",
				SourceID:     tc.hook.source,
				ReceivedAt:   1_764_445_200_123_456_789,
				RouteParams:  []envelope.Param{{Key: "s", Value: tc.hook.source}},
				Headers:      headers,
				Body:         []byte(body),
				Verification: v,
				DedupeKey:    tc.key,
			}
			if enc := want.AppendTo(nil); !bytes.Equal(g.wal.last, enc) {
				var got envelope.Envelope
				_, err := envelope.Decode(g.wal.last, &got)
				t.Fatalf("the edge wrote\n%x\nAppendTo writes\n%x\n(the edge's decodes to %+v, %v)", g.wal.last, enc, got, err)
			}
		})
	}
}

// TestIngestReleasesOnEveryExit: whichever way a request leaves ingest
// (refused, answered as a duplicate, failed to commit, panicked, or
// committed), it gives back its queue and pipeline bytes; its pen bytes
// and its dedupe key stay only with a hook that committed. A key left
// pending would make the retry below wait and fail.
func TestIngestReleasesOnEveryExit(t *testing.T) {
	t.Setenv("INGEST_SECRET", "s3cret")
	body := `{"id":"evt_1"}`
	for _, tc := range []struct {
		name    string
		hook    hook
		fail    error
		panic   bool
		status  int
		pen     int64 // pen bytes still reserved after the request
		keyKept bool  // the key stays with a committed hook
	}{
		{"committed", hook{source: "keyed", id: "a", body: body}, nil, false, 201, 0, true},
		{"short body", hook{source: "keyed", id: "a", body: body, short: 3}, nil, false, 400, 0, false},
		{"signature refused", hook{source: "strict", sig: "sha256=00", body: body}, nil, false, 401, 0, false},
		{"quarantined", hook{source: "pen", sig: "sha256=00", body: body}, nil, false, 202, int64(len(body)), false},
		{"quarantined, commit refused", hook{source: "pen", sig: "sha256=00", body: body}, wal.ErrTooLarge, false, 413, 0, false},
		{"keyed, commit failed", hook{source: "keyed", id: "a", body: body}, errors.New("disk"), false, 503, 0, false},
		{"keyed, commit panicked", hook{source: "signed", id: "a", sig: sign(body), body: body}, nil, true, 503, 0, false},
		{"quarantined, commit panicked", hook{source: "pen", sig: "sha256=00", body: body}, nil, true, 503, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newIngestRig(t)
			g.wal.fail, g.wal.panic = tc.fail, tc.panic
			if st, out, _ := g.serve(tc.hook); st != tc.status {
				t.Fatalf("status %d, want %d: %s", st, tc.status, out)
			}
			if got := g.router.PipelineBytes(); got != 0 {
				t.Errorf("PipelineBytes() = %d after the request, want 0", got)
			}
			if hooks, b := g.queues.Totals(); hooks != 0 || b != 0 {
				t.Errorf("queues hold %d hooks, %d bytes after the request, want none", hooks, b)
			}
			if got := g.pen.reserved(); got != tc.pen {
				t.Errorf("pen holds %d bytes after the request, want %d", got, tc.pen)
			}
			if tc.hook.id == "" {
				return
			}
			g.wal.fail, g.wal.panic = nil, false
			want := 201
			if tc.keyKept {
				want = 200 // the committed hook's duplicate
			}
			retry := tc.hook
			retry.short = 0
			if st, out, _ := g.serve(retry); st != want {
				t.Fatalf("retry: status %d, want %d: %s", st, want, out)
			}
		})
	}
}

// TestVerifySignatureAnyCase: the envelope keeps a signature header's
// name as sent, and verification still finds it in any case.
func TestVerifySignatureAnyCase(t *testing.T) {
	g := newIngestRig(t)
	body := `{"id":"evt_1","amount":42}`
	for _, name := range []string{"x-hub-signature-256", "X-HUB-SIGNATURE-256", "x-Hub-Signature-256"} {
		head := "POST /webhooks/signed HTTP/1.1\r\nHost: hooks.example.com\r\n" + name + ": " + sign(body) +
			fmt.Sprintf("\r\nContent-Length: %d\r\n\r\n", len(body))
		var ctx fasthttp.RequestCtx
		fasthttpHeader(t, &ctx.Request.Header, []byte(head))
		ctx.Request.SetBodyStream(strings.NewReader(body), len(body))
		g.router.HeaderReceived(&ctx.Request.Header)
		g.router.Handle(&ctx)
		if st := ctx.Response.StatusCode(); st != 201 {
			t.Fatalf("%s: %d %s", name, st, ctx.Response.Body())
		}
		var e envelope.Envelope
		if _, err := envelope.Decode(g.wal.last, &e); err != nil {
			t.Fatal(err)
		}
		if !e.Verification.Verified || len(e.Headers) != 3 || e.Headers[1].Name != name {
			t.Errorf("%s: stored verified=%v headers %q", name, e.Verification.Verified, e.Headers)
		}
	}
}
