package main

// The checked-in corpus (testdata/corpus.jsonl.zst, made by gencorpus):
// 12,000 Stripe-like and GitHub-like events of 0.5–8 KiB, drawn from
// recurring merchants, customers, repositories and members, with fresh
// ids, secrets and prose. It measures the compression ratio on bodies
// shaped like real providers' (loadgen's payloads are a fixed pool with
// a token each, which measures speed, not ratio).

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/klauspost/compress/zstd"

	"github.com/ankusa/ankusa/envelope"
)

// corpusEvent is one line of the corpus (see gencorpus).
type corpusEvent struct {
	Source string          `json:"source"`
	Tenant string          `json:"tenant"`
	Event  string          `json:"event"`
	Body   json.RawMessage `json:"body"`
}

func loadCorpus(path string) ([]corpusEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open the corpus: %w (run from the repository root, or pass -corpus)", err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f, zstd.WithDecoderMaxWindow(1<<27))
	if err != nil {
		return nil, fmt.Errorf("cannot read corpus %q: %w", path, err)
	}
	defer zr.Close()
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var evs []corpusEvent
	for sc.Scan() {
		var ev corpusEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("corpus %q line %d: %w", path, len(evs)+1, err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read corpus %q: %w", path, err)
	}
	return evs, nil
}

// wrapCorpus turns every event into the envelope the edge would have
// committed for it: the provider's request headers as they arrive
// (signature computed over the body), tenant and source, a route
// parameter, the verifier's verdict and the provider's delivery key.
func wrapCorpus(evs []corpusEvent) *hooks {
	r := rand.New(rand.NewPCG(7, 11))
	h := &hooks{}
	ordinals := map[string]uint32{}
	recv := firstReceived.UnixNano()
	for i := range evs {
		ev := &evs[i]
		recv += int64(r.ExpFloat64() * 20e3)
		ord, ok := ordinals[ev.Tenant]
		if !ok {
			ord = uint32(len(ordinals) + 1)
			ordinals[ev.Tenant] = ord
		}
		seq := uint64(i + 1)
		e := envelope.Envelope{
			Seq: seq, ID: envelope.MakeID(uint64(recv/1e6), 1, seq), TenantOrdinal: ord,
			TenantID: ev.Tenant, SourceID: ev.Source, ReceivedAt: recv,
			RouteParams:  []envelope.Param{{Key: "tenant", Value: ev.Tenant}},
			Body:         ev.Body,
			Verification: envelope.Verification{Verifier: ev.Source, Verified: true},
		}
		if ev.Source == "github" {
			e.Headers, e.DedupeKey = githubHeaders(r, ev, recv)
		} else {
			e.Headers, e.DedupeKey = stripeHeaders(ev, recv)
		}
		p := e.AppendTo(nil)
		h.envs = append(h.envs, e)
		h.payloads = append(h.payloads, p)
		h.raw += int64(4 + len(p))
		h.bodies += int64(len(ev.Body))
	}
	return h
}

const host = "hooks.ankusa.example"

func stripeHeaders(ev *corpusEvent, recv int64) ([]envelope.Header, string) {
	var id struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(ev.Body, &id)
	t := strconv.FormatInt(recv/1e9, 10)
	mac := hmac.New(sha256.New, []byte("whsec_"+ev.Tenant))
	mac.Write([]byte(t + "."))
	mac.Write(ev.Body)
	return []envelope.Header{
		{Name: "Host", Value: host},
		{Name: "User-Agent", Value: "Stripe/1.0 (+https://stripe.com/docs/webhooks)"},
		{Name: "Content-Length", Value: strconv.Itoa(len(ev.Body))},
		{Name: "Accept", Value: "*/*; q=0.5, application/xml"},
		{Name: "Cache-Control", Value: "no-cache"},
		{Name: "Content-Type", Value: "application/json; charset=utf-8"},
		{Name: "Stripe-Signature", Value: "t=" + t + ",v1=" + hex.EncodeToString(mac.Sum(nil))},
		{Name: "Accept-Encoding", Value: "gzip"},
	}, id.ID
}

func githubHeaders(r *rand.Rand, ev *corpusEvent, recv int64) ([]envelope.Header, string) {
	var u [16]byte
	for i := range u {
		u[i] = byte(r.Uint32())
	}
	d := hex.EncodeToString(u[:])
	delivery := d[:8] + "-" + d[8:12] + "-11f0-" + d[16:20] + "-" + d[20:]
	sig1 := hmac.New(sha1.New, []byte("gh-"+ev.Tenant))
	sig1.Write(ev.Body)
	sig256 := hmac.New(sha256.New, []byte("gh-"+ev.Tenant))
	sig256.Write(ev.Body)
	hookID := strconv.FormatUint(uint64(len(ev.Tenant))*104729+480000000, 10)
	return []envelope.Header{
		{Name: "Host", Value: host},
		{Name: "Accept", Value: "*/*"},
		{Name: "Content-Type", Value: "application/json"},
		{Name: "User-Agent", Value: "GitHub-Hookshot/8e03811"},
		{Name: "Content-Length", Value: strconv.Itoa(len(ev.Body))},
		{Name: "X-Github-Delivery", Value: delivery},
		{Name: "X-Github-Event", Value: ev.Event},
		{Name: "X-Github-Hook-Id", Value: hookID},
		{Name: "X-Github-Hook-Installation-Target-Id", Value: strconv.Itoa(9000000 + len(ev.Tenant))},
		{Name: "X-Github-Hook-Installation-Target-Type", Value: "organization"},
		{Name: "X-Hub-Signature", Value: "sha1=" + hex.EncodeToString(sig1.Sum(nil))},
		{Name: "X-Hub-Signature-256", Value: "sha256=" + hex.EncodeToString(sig256.Sum(nil))},
	}, delivery
}
