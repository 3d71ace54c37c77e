package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/ankusa/ankusa/tools/loadgen/payload"
)

// requestTimeout bounds one request: longer than the node's SIGSTOP
// fault, so a stopped node shows as slow 201s, not as errors.
const requestTimeout = 15 * time.Second

// ack is an acknowledged hook: the sha256 of the body sent and when the
// 201 arrived.
type ack struct {
	sum [32]byte
	at  time.Time
}

// load is the open-loop generator and what it was told.
type load struct {
	url      func(tenant, source int) string
	rate     float64
	inflight chan struct{}
	pool     *payload.Pool
	tenants  int
	sources  int
	client   *http.Client
	tl       *timeline
	seed     uint64

	mu    sync.Mutex
	acked map[string]ack
	bad   []string // 201 answers without a parsable id
	wg    sync.WaitGroup
}

func newLoad(o Options, listen string, tl *timeline) (*load, error) {
	mix, err := payload.ParseSizeMix("70%512,25%2KiB,5%16KiB")
	if err != nil {
		return nil, err
	}
	pool, err := payload.NewPool("stripe", mix, 256, o.Seed, time.Now())
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: o.Inflight, MaxConnsPerHost: o.Inflight, IdleConnTimeout: time.Minute}
	return &load{
		url: func(t, s int) string {
			return fmt.Sprintf("http://%s/webhooks/t%d/s%d", listen, t, s)
		},
		rate: o.Rate, inflight: make(chan struct{}, o.Inflight), pool: pool,
		tenants: o.Tenants, sources: o.Sources, tl: tl, seed: o.Seed,
		client: &http.Client{Transport: tr, Timeout: requestTimeout},
		acked:  map[string]ack{},
	}, nil
}

// run sends request i at start + i/rate, for those due before start + d
// and until ctx ends, then waits for the requests in flight.
func (l *load) run(ctx context.Context, start time.Time, d time.Duration) {
	r := rand.New(rand.NewPCG(l.seed, 1))
	for i := uint64(0); ; i++ {
		due := start.Add(time.Duration(float64(i) / l.rate * float64(time.Second)))
		if due.Sub(start) >= d {
			l.wg.Wait()
			return
		}
		if wait := time.Until(due); wait > 0 {
			select {
			case <-ctx.Done():
				l.wg.Wait()
				return
			case <-time.After(wait):
			}
		} else if ctx.Err() != nil {
			l.wg.Wait()
			return
		}
		body := l.body(r, i)
		url := l.url(r.IntN(l.tenants), r.IntN(l.sources))
		select {
		case l.inflight <- struct{}{}:
		default:
			l.tl.answer(due, -1)
			continue
		}
		l.wg.Add(1)
		go func() {
			defer func() { <-l.inflight; l.wg.Done() }()
			l.send(url, body, due)
		}()
	}
}

// body is a pool body with request i's unique token in its slot (the
// Stripe event id, which the dedupe sources key on).
func (l *load) body(r *rand.Rand, i uint64) []byte {
	b := l.pool.Pick(r)
	data := bytes.Clone(b.Data)
	payload.PutBase62(data[b.Slot:b.Slot+payload.TokenLen], i)
	return data
}

func (l *load) send(url string, body []byte, due time.Time) {
	resp, err := l.client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		l.tl.answer(due, 0)
		return
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if err != nil {
		l.tl.answer(due, 0)
		return
	}
	l.tl.answer(due, resp.StatusCode)
	if resp.StatusCode != http.StatusCreated {
		return
	}
	var a struct {
		ID string `json:"id"`
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if json.Unmarshal(answer, &a) != nil || a.ID == "" {
		l.bad = append(l.bad, string(answer))
		return
	}
	sum := sha256.Sum256(body)
	if prev, ok := l.acked[a.ID]; ok && prev.sum != sum {
		// Two different hooks acknowledged under one event id: identity
		// (DESIGN.md §6.1) broke, across a restart most likely.
		l.tl.finding("event id %s acknowledged for two different bodies", a.ID)
		return
	}
	l.acked[a.ID] = ack{sum: sum, at: time.Now()}
}

// results is every acknowledged hook by event id, and the 201 answers
// that carried no id.
func (l *load) results() (map[string]ack, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked, l.bad
}
