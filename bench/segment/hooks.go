package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/tools/loadgen/payload"
)

// hooks are what the segment stage seals: envelopes numbered 1..n as the
// WAL would number them, and their records.
type hooks struct {
	envs     []envelope.Envelope // identity set (Seq, ID, TenantOrdinal)
	payloads [][]byte            // AppendTo of envs, identity prefix included
	raw      int64               // record bytes: payloads and their 4-byte lengths
	bodies   int64               // body bytes alone
}

// hookTenants is how many tenants the hooks are spread over, in turn.
const hookTenants = 16

// hookSecret signs the hooks. A fixed test value: it guards nothing.
const hookSecret = "whsec_ankusaBenchSegment0123456789"

// firstReceived is when the first hook arrives; the next ones follow
// 20 µs apart, about the spine's rate.
var firstReceived = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// makeHooks builds n hooks of loadgen's payloads (kind and sizes as its
// -kind and -size), each as loadgen sends it and the edge would commit
// it: a pool body with a token of its own in its slot, signed by its
// provider's scheme (Stripe-Signature, or X-Hub-Signature-256 with the
// GitHub delivery and event headers), with its tenant, source and
// verdict.
func makeHooks(n int, kind string, sizes payload.SizeMix) (*hooks, error) {
	pool, err := payload.NewPool(kind, sizes, 0, 7, firstReceived)
	if err != nil {
		return nil, err
	}
	signers := map[string]*payload.Signer{
		"stripe": payload.NewSigner("stripe", hookSecret),
		"github": payload.NewSigner("github", hookSecret),
	}
	r := rand.New(rand.NewPCG(7, 11))
	var hdr fasthttp.RequestHeader
	var token [payload.TokenLen]byte
	h := &hooks{}
	for i := range n {
		seq := uint64(i + 1)
		b := pool.Pick(r)
		body := bytes.Clone(b.Data)
		payload.PutBase62(token[:], seq)
		copy(body[b.Slot:], token[:])
		at := firstReceived.Add(time.Duration(i) * 20 * time.Microsecond)
		hdr.Reset()
		hdr.SetContentType("application/json")
		hdr.Set("Content-Length", strconv.Itoa(len(body)))
		signers[b.Kind].Sign(&hdr, body, at, token[:], b)
		tenant := i % hookTenants
		e := envelope.Envelope{
			Seq: seq, ID: envelope.MakeID(uint64(at.UnixMilli()), 1, seq), TenantOrdinal: uint32(tenant + 1),
			TenantID: fmt.Sprintf("t%d", tenant), SourceID: b.Kind, ReceivedAt: at.UnixNano(),
			Headers:      headersOf(&hdr),
			Body:         body,
			Verification: envelope.Verification{Verifier: b.Kind, Verified: true},
		}
		p := e.AppendTo(nil)
		h.envs = append(h.envs, e)
		h.payloads = append(h.payloads, p)
		h.raw += int64(4 + len(p))
		h.bodies += int64(len(body))
	}
	return h, nil
}

// headersOf copies the request headers into the envelope's form.
func headersOf(hdr *fasthttp.RequestHeader) []envelope.Header {
	var out []envelope.Header
	for k, v := range hdr.All() {
		out = append(out, envelope.Header{Name: string(k), Value: string(v)})
	}
	return out
}

// sampleIDs draws n ids of the hooks at random (repeats allowed).
func sampleIDs(h *hooks, n int) []envelope.ID {
	r := rand.New(rand.NewPCG(3, 5))
	ids := make([]envelope.ID, n)
	for i := range ids {
		ids[i] = h.envs[r.IntN(len(h.envs))].ID
	}
	return ids
}
