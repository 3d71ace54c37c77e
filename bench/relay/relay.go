package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// relay forwards every request to one receiver and answers after it. Safe
// for concurrent use: fasthttp calls handle from many goroutines.
type relay struct {
	hc        *fasthttp.HostClient
	url       string // the receiver URL as given
	host      string // its host[:port], the Host header sent
	timeout   time.Duration
	startMs   uint64 // the relay's start, unix ms: the ids' time
	forwarded atomic.Uint64
	failed    atomic.Uint64
}

// newRelay checks the receiver URL (plain http, a host) and the bounds.
func newRelay(to string, conns int, timeout time.Duration) (*relay, error) {
	u, err := url.Parse(to)
	switch {
	case to == "":
		return nil, errors.New("-to is required: the receiver's URL, http://host:port/path")
	case err != nil:
		return nil, fmt.Errorf("-to %q: %w", to, err)
	case u.Scheme != "http" || u.Host == "":
		return nil, fmt.Errorf("-to %q: want http://host[:port]/path", to)
	case conns < 1:
		return nil, fmt.Errorf("-conns %d: want at least 1", conns)
	case timeout <= 0:
		return nil, fmt.Errorf("-timeout %v: want a positive duration", timeout)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &relay{
		hc: &fasthttp.HostClient{
			Addr:                          addr,
			MaxConns:                      conns,
			MaxConnWaitTimeout:            timeout, // every connection busy: wait, not fail at once
			ReadTimeout:                   timeout,
			WriteTimeout:                  timeout,
			NoDefaultUserAgentHeader:      true, // the sender's own is forwarded
			DisableHeaderNamesNormalizing: true,
			DisablePathNormalizing:        true,
		},
		url:     to,
		host:    u.Host,
		timeout: timeout,
		startMs: uint64(time.Now().UnixMilli()),
	}, nil
}

var (
	contentJSON = []byte("application/json")
	statsPath   = []byte("/stats")
)

// handle forwards the request and answers after the receiver: 201 after a
// 2xx, 502 otherwise. GET /stats is the relay's own.
func (r *relay) handle(ctx *fasthttp.RequestCtx) {
	if ctx.IsGet() && string(ctx.Path()) == string(statsPath) {
		ctx.SetContentTypeBytes(contentJSON)
		ctx.SetBodyString(fmt.Sprintf(`{"forwarded":%d,"failed":%d}`, r.forwarded.Load(), r.failed.Load()))
		return
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer func() {
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}()
	// The method and every header as received; the URI and Host are the
	// receiver's. The body is ctx's, lent for the call: DoTimeout returns
	// before the handler does, so nothing keeps it after.
	ctx.Request.Header.CopyTo(&req.Header)
	req.Header.ResetConnectionClose()
	req.SetRequestURI(r.url)
	req.Header.SetHost(r.host)
	req.SetBodyRaw(ctx.PostBody())
	err := r.hc.DoTimeout(req, resp, r.timeout)
	if err == nil && resp.StatusCode()/100 == 2 {
		benchkit.Created(ctx, r.startMs, r.forwarded.Add(1))
		return
	}
	r.failed.Add(1)
	why := "the receiver answered " + strconv.Itoa(resp.StatusCode())
	if err != nil {
		why = "cannot reach the receiver: " + err.Error()
	}
	ctx.SetStatusCode(fasthttp.StatusBadGateway)
	ctx.SetContentTypeBytes(contentJSON)
	msg, _ := json.Marshal(why) // a string always marshals
	ctx.SetBodyString(`{"error":"bad_gateway","message":` + string(msg) + `}`)
}
