package main

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
	"github.com/valyala/fasthttp"
)

// TestSignedRequestsReachServer checks the headers go out on the wire.
func TestSignedRequestsReachServer(t *testing.T) {
	const secret = "whsec_wire"
	v, err := verify.New(config.Verify{Type: "stripe", Secret: config.Secret{Ref: "x", Value: secret}})
	if err != nil {
		t.Fatal(err)
	}
	var bad atomic.Int64
	ts := startServer(t, &testServer{status: func(ctx *fasthttp.RequestCtx) int {
		if v.Verify(&ctx.Request.Header, ctx.PostBody(), time.Now()) != nil {
			bad.Add(1)
			return fasthttp.StatusUnauthorized
		}
		return fasthttp.StatusCreated
	}})
	sum := mustRun(t, "-url", ts.url+"/x", "-c", "1", "-n", "50", "-warmup", "0", "-sign", "stripe", "-secret", secret)
	if sum.Status["201"] != 50 || bad.Load() != 0 {
		t.Fatalf("statuses %v, %d refused signatures; want 50 verified", sum.Status, bad.Load())
	}
}
