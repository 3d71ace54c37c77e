package verify

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
)

// reqHeaders builds fasthttp request headers, as the edge hands them over.
func reqHeaders(method, uri string, kv ...string) *fasthttp.RequestHeader {
	var h fasthttp.RequestHeader
	h.SetMethod(method)
	h.SetRequestURI(uri)
	h.SetHost("hooks.example.com")
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return &h
}

func TestEventTypeFromPresetAndConfig(t *testing.T) {
	h := reqHeaders("POST", "/in/s", "X-GitHub-Event", "push", "X-Other", "other")
	body := []byte(`{"type":"invoice.paid","data":{"object":{"kind":"x"}},"items":[{"t":"first"}],"n":5,"f":-1.50e3,"b":true,"z":null,"dup":{"type":"a"},"dup":{"type":"b"},"twice":"a","twice":"b","dup2":{"x":1,"x":2,"type":"ok"},"ctl":"a\nb","long":"` + strings.Repeat("x", MaxEventTypeBytes+1) + `"}`)
	for _, c := range []struct {
		name, preset, config, want string
	}{
		{"preset header", "header:x-github-event", "", "push"},
		{"config overrides preset", "header:X-GitHub-Event", "header:X-Other", "other"},
		{"config alone", "", "json:type", "invoice.paid"},
		{"nested path", "json:data.object.kind", "", "x"},
		{"array index", "json:items.0.t", "", "first"},
		{"absent header", "header:X-Nope", "", ""},
		{"absent path", "json:data.nope", "", ""},
		{"a number, as sent", "json:n", "", "5"},
		{"a negative fraction, as sent", "json:f", "", "-1.50e3"},
		{"true is not one", "json:b", "", ""},
		{"null is not one", "json:z", "", ""},
		{"object", "json:data", "", ""},
		{"array", "json:items", "", ""},
		{"through a duplicated key", "json:dup.type", "", ""},
		{"a duplicated key itself", "json:twice", "", ""},
		{"beside a duplicated key", "json:dup2.type", "", "ok"},
		{"control byte", "json:ctl", "", ""},
		{"over the bound", "json:long", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := withPreset(None{}, &Preset{Name: "p", EventType: c.preset}, config.Verify{Type: "p", EventType: c.config}, nil)
			if err != nil {
				t.Fatal(err)
			}
			et, ok := v.(EventTyper)
			if !ok {
				t.Fatalf("%T is not an EventTyper", v)
			}
			got := et.AppendEventType([]byte("pre:"), h, body)
			if string(got) != "pre:"+c.want {
				t.Fatalf("AppendEventType = %q, want %q", got, "pre:"+c.want)
			}
			if v.Name() != "none" || v.Verify(h, body, time.Now()) != nil {
				t.Fatal("the wrapper changed the verifier's name or its verdict")
			}
		})
	}
	// Not JSON: no event type.
	v, _ := withPreset(None{}, &Preset{Name: "p", EventType: "json:type"}, config.Verify{}, nil)
	if got := v.(EventTyper).AppendEventType(nil, h, []byte("type=push")); len(got) != 0 {
		t.Fatalf("a form body gave event type %q", got)
	}
	// Without an event type the verifier is returned as it is.
	if v, _ := withPreset(None{}, &Preset{Name: "p"}, config.Verify{}, nil); v != (None{}) {
		t.Fatalf("withPreset wrapped a verifier with nothing to add: %T", v)
	}
}

func TestEventTypeRefused(t *testing.T) {
	for spec, want := range map[string]string{
		"push":                                   "must be header:NAME or json:PATH",
		"header:":                                "empty header name",
		"header:X Evt":                           "not a valid header name",
		"json:":                                  "empty path",
		"json:a..b":                              "empty segment",
		"json:" + strings.Repeat("a.", 20) + "a": "deeper than",
	} {
		_, err := withPreset(None{}, &Preset{Name: "p"}, config.Verify{EventType: spec}, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "verify.event_type: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("event_type %q: error %v, want verify.event_type: ... %s", spec, err, want)
		}
	}
}

// TestEventTypeThroughNew: verify.event_type works for the built-in types,
// the generic hmac among them, and a bad one is New's error.
func TestEventTypeThroughNew(t *testing.T) {
	v, err := New(config.Verify{Type: "hmac", Secret: config.Secret{Ref: "k", Value: "k"}, Header: "X-Sig", EventType: "header:X-Event"})
	if err != nil {
		t.Fatal(err)
	}
	if got := v.(EventTyper).AppendEventType(nil, reqHeaders("POST", "/", "X-Event", "order.created"), nil); string(got) != "order.created" {
		t.Fatalf("hmac event type = %q", got)
	}
	if v.Name() != "hmac" {
		t.Fatalf("Name = %q", v.Name())
	}
	if _, err := New(config.Verify{Type: "none", EventType: "body"}); err == nil || !strings.HasPrefix(err.Error(), "verify.event_type:") {
		t.Fatalf("New with a bad event_type: %v", err)
	}
	if _, err := New(config.Verify{Type: "none", HandshakeToken: config.Secret{Ref: "t", Value: "t"}}); err == nil || !strings.HasPrefix(err.Error(), "verify.handshake_token:") {
		t.Fatalf("New with a handshake_token and no handshake: %v", err)
	}
}
