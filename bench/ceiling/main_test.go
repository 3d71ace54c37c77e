package main

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/envelope"
)

// TestAnswer checks the ceiling's answer has the appliance's shape.
func TestAnswer(t *testing.T) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/webhooks/demo")
	ctx.Request.SetBodyString(`{"hello":"world"}`)
	handle(&ctx)
	if got := ctx.Response.StatusCode(); got != fasthttp.StatusCreated {
		t.Fatalf("status %d, want 201", got)
	}
	if got := string(ctx.Response.Header.ContentType()); got != "application/json" {
		t.Errorf("content-type %q", got)
	}
	body := ctx.Response.Body()
	const pre, post = `{"id":"`, `"}`
	if len(body) != len(pre)+envelope.IDTextLen+len(post) || string(body[:len(pre)]) != pre {
		t.Fatalf("body %q", body)
	}
	if _, err := envelope.ParseID(body[len(pre) : len(body)-len(post)]); err != nil {
		t.Errorf("body %q: %v", body, err)
	}
}
