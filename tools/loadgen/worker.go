package main

import (
	"crypto/sha256"
	"math/rand/v2"
	"time"

	"github.com/ankusa/ankusa/tools/loadgen/payload"
	"github.com/valyala/fasthttp"
)

// worker sends one request at a time on behalf of a loop. It owns its
// request, response, buffers, rand and signer; nothing in it is shared, so
// a worker is used by one goroutine only.
type worker struct {
	run    *runner
	rec    *recorder
	r      *rand.Rand
	picker *targetPicker
	signer *payload.Signer
	conn   *httpConn
	hdr    *fasthttp.RequestHeader
	resp   *fasthttp.Response
	body   []byte // the body being sent: a pool body with this request's token
	url    []byte
	token  [payload.TokenLen]byte
	seq    uint64
}

func (rn *runner) newWorker(id int) *worker {
	seed := rn.seed + uint64(id)*0x9e3779b97f4a7c15
	r := rand.New(rand.NewPCG(seed, uint64(id)))
	w := &worker{
		run:    rn,
		rec:    rn.shards[id%len(rn.shards)],
		r:      r,
		picker: rn.targets.picker(r),
		signer: payload.NewSigner(rn.cfg.Sign, rn.cfg.Secret),
		conn:   newHTTPConn(rn.tmpl, rn.cfg.Timeout, rn.cfg.Spin),
		hdr:    &fasthttp.RequestHeader{},
		resp:   &fasthttp.Response{},
	}
	// Token layout: 4 characters of run nonce, 3 of worker id, 9 of sequence.
	copy(w.token[:4], rn.nonce[:])
	payload.PutBase62(w.token[4:7], uint64(id))
	return w
}

// nextToken advances the request token, unique within the run and, by its
// nonce, very likely across runs.
func (w *worker) nextToken() {
	w.seq++
	payload.PutBase62(w.token[7:], w.seq)
}

// send signs (at now, a recent clock reading) and sends the request
// prepare built from pb, and records it when measured. Its latency counts
// from due (open loop: the scheduled time) or, when due is zero (closed
// loop) or the request goes out early, from the actual send. It returns
// when the exchange ended, and the transport error kind unless ok (an HTTP
// answer arrived).
func (w *worker) send(pb *payload.Body, measured bool, due, now time.Time) (done time.Time, kind errKind, ok bool) {
	w.signer.Sign(w.hdr, w.body, now, w.token[:], pb)
	sent := time.Now() // just before the request goes out
	origin, lag := sent, time.Duration(-1)
	if !due.IsZero() {
		lag = max(sent.Sub(due), 0)
		if lag > 0 {
			origin = due
		}
	}
	err := w.conn.do(w.hdr, w.body, w.resp, sent)
	done = time.Now()
	if err != nil {
		kind = classify(err)
		w.run.countError(err)
		if measured {
			w.rec.failure(kind, done)
			w.logSent(due, done, 0)
		}
		return done, kind, false
	}
	if !measured {
		return done, 0, true
	}
	status := w.resp.StatusCode()
	w.rec.answer(status, done.Sub(origin), lag, done.Sub(sent), done)
	if status == fasthttp.StatusCreated && w.run.acked != nil {
		w.ack()
	}
	w.logSent(due, done, status)
	return done, 0, true
}

// prepare fills the request: a pool body with a fresh token, a URL for a
// drawn tenant and source, the headers.
func (w *worker) prepare() *payload.Body {
	pb := w.run.pool.Pick(w.r)
	w.nextToken()
	w.body = append(w.body[:0], pb.Data...)
	copy(w.body[pb.Slot:pb.Slot+payload.TokenLen], w.token[:])
	tenant, source := w.picker.pick()
	w.url = w.run.tmpl.appendTo(w.url[:0], tenant, source)

	host, uri := splitURL(w.url)
	h := w.hdr
	h.Reset()
	h.SetMethod(fasthttp.MethodPost)
	h.SetRequestURIBytes(uri)
	h.SetHostBytes(host)
	h.SetContentType("application/json")
	h.SetContentLength(len(w.body))
	return pb
}

// ack writes the acked line of a 201 to a measured request.
func (w *worker) ack() {
	id, ok := answerID(w.resp.Body())
	if !ok {
		w.rec.missingID()
		return
	}
	sum := sha256.Sum256(w.body)
	w.run.acked.add(id, &sum)
}

// logSent writes the -sent line of a measured request (status 0: no
// answer).
func (w *worker) logSent(due, done time.Time, status int) {
	if w.run.sent == nil {
		return
	}
	sum := sha256.Sum256(w.body)
	w.run.sent.add(&sum, due, done, status)
}
