package verify_test

import (
	"encoding/base64"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// vector is one preset's test request (testdata/presets/<name>.yaml): the
// provider's published example where there is one, else one computed by
// gen_*.py with a reference implementation.
type vector struct {
	Preset     string            `yaml:"preset"`
	Origin     string            `yaml:"origin"`
	Follows    string            `yaml:"follows"`
	Secret     string            `yaml:"secret"`
	Secrets    []string          `yaml:"secrets"`
	Verify     map[string]string `yaml:"verify"`
	Now        int64             `yaml:"now"`
	Method     string            `yaml:"method"`
	URL        string            `yaml:"url"`
	Headers    map[string]string `yaml:"headers"`
	Body       string            `yaml:"body"`
	BodyBase64 string            `yaml:"body_base64"`
	EventType  string            `yaml:"event_type"`
	Negative   []negative        `yaml:"negative"`
}

// negative is a request the preset must refuse, with the error it must
// refuse it with; headers and body default to the positive's (a header
// given "" is removed).
type negative struct {
	Name    string            `yaml:"name"`
	Headers map[string]string `yaml:"headers"`
	Body    *string           `yaml:"body"`
	Now     int64             `yaml:"now"`
	Err     string            `yaml:"err"`
}

var vectorErrs = map[string]error{
	"missing":   verify.ErrMissing,
	"malformed": verify.ErrMalformed,
	"mismatch":  verify.ErrMismatch,
	"expired":   verify.ErrExpired,
}

const vectorDir = "testdata/presets"

func loadVector(t *testing.T, path string) *vector {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v vector
	if err := yaml.UnmarshalWithOptions(data, &v, yaml.DisallowUnknownField()); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &v
}

// config is the verify section the vector's request is checked with.
func (v *vector) config(t *testing.T) config.Verify {
	t.Helper()
	c := config.Verify{Type: v.Preset}
	if v.Secret != "" {
		c.Secret = secret(v.Secret)
	}
	c.Secrets = secrets(v.Secrets...)
	for k, val := range v.Verify {
		switch k {
		case "url":
			c.URL = val
		case "handshake_token":
			c.HandshakeToken = secret(val)
		case "event_type":
			c.EventType = val
		case "webhook_id":
			c.WebhookID = val
		case "tolerance":
			d, err := time.ParseDuration(val)
			if err != nil {
				t.Fatalf("verify.tolerance: %v", err)
			}
			c.Tolerance = config.Duration(d)
		default:
			t.Fatalf("verify.%s: the vector harness does not know this key", k)
		}
	}
	return c
}

func (v *vector) body(t *testing.T) []byte {
	t.Helper()
	if v.BodyBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(v.BodyBase64)
		if err != nil {
			t.Fatalf("body_base64: %v", err)
		}
		return b
	}
	return []byte(v.Body)
}

// request builds the headers as the edge has them: method, Host and
// request URI from the vector's url, then its headers (over) applied on
// top of base, "" removing one.
func (v *vector) request(t *testing.T, over map[string]string) *fasthttp.RequestHeader {
	t.Helper()
	u, err := url.Parse(v.URL)
	if err != nil || u.Host == "" {
		t.Fatalf("url: %q is not an absolute URL", v.URL)
	}
	h := &fasthttp.RequestHeader{}
	h.SetMethod(strings.ToUpper(cmp(v.Method, "POST")))
	h.SetRequestURI(u.RequestURI())
	h.SetHost(u.Host)
	for k, val := range v.Headers {
		h.Set(k, val)
	}
	for k, val := range over {
		if val == "" {
			h.Del(k)
		} else {
			h.Set(k, val)
		}
	}
	return h
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestPresetVectors runs every preset's vector: the positive passes; a
// byte of the body (of the credential, for token and basic; of the
// signature, for body-hmac whose body is mostly unsigned) changed fails;
// past its tolerance a timestamped preset answers ErrExpired; every
// explicit negative fails with its error.
func TestPresetVectors(t *testing.T) {
	presets, err := verify.Presets()
	if err != nil {
		t.Fatalf("presets.yaml: %v", err)
	}
	if len(presets) == 0 {
		t.Fatal("presets.yaml lists no preset")
	}
	for _, p := range presets {
		t.Run(p.Name, func(t *testing.T) {
			if !strings.HasPrefix(p.Docs, "https://") {
				t.Errorf("docs: %q is not an https address", p.Docs)
			}
			if !slices.Contains(verify.Families, p.Family) {
				t.Errorf("family: %q is not one of %v", p.Family, verify.Families)
			}
			path := filepath.Join(vectorDir, p.Name+".yaml")
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("no vector: %s must exist (a request the preset accepts, see presets_test.go)", path)
			}
			vec := loadVector(t, path)
			checkVector(t, &p, vec)
		})
	}
}

func checkVector(t *testing.T, p *verify.Preset, vec *vector) {
	t.Helper()
	if vec.Preset != p.Name {
		t.Fatalf("preset: %q, want %q", vec.Preset, p.Name)
	}
	if !slices.Contains([]string{"published", "python", "openssl"}, vec.Origin) {
		t.Fatalf("origin: %q must be published, python or openssl", vec.Origin)
	}
	if !strings.HasPrefix(vec.Follows, "https://") {
		t.Fatalf("follows: %q must be the https address the vector follows", vec.Follows)
	}
	if vec.Now == 0 {
		t.Fatal("now: required (the unix second the check runs at)")
	}
	v, err := verify.New(vec.config(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if v.Name() != p.Name {
		t.Errorf("Name() = %q, want %q", v.Name(), p.Name)
	}
	body := vec.body(t)
	at := time.Unix(vec.Now, 0)
	h := vec.request(t, nil)
	if err := v.Verify(h, body, at); err != nil {
		t.Fatalf("the vector is refused: %v", err)
	}
	// A vector that names its event type holds the preset to reading it:
	// a preset without event_type is no EventTyper, and fails here.
	if vec.EventType != "" {
		et, ok := v.(verify.EventTyper)
		if !ok {
			t.Errorf("the vector's event type is %q, but the preset reads none (event_type in presets.yaml)", vec.EventType)
		} else if got := string(et.AppendEventType(nil, h, body)); got != vec.EventType {
			t.Errorf("event type %q, want %q", got, vec.EventType)
		}
	}

	// One byte changed.
	switch {
	case p.Family == "token" && p.Signature != "":
		// The token is in the body: the first copy of the secret there.
		i := strings.Index(string(body), vec.Secret)
		if vec.Secret == "" || i < 0 {
			t.Fatalf("the vector's body does not carry its secret")
		}
		if err := v.Verify(h, flip(body, i+len(vec.Secret)/2), at); !errors.Is(err, verify.ErrMismatch) {
			t.Errorf("body token with a byte changed: %v, want ErrMismatch", err)
		}
	case p.Family == "token", p.Family == "basic":
		name := cmp(p.Header, "Authorization")
		val := h.Peek(name)
		if len(val) == 0 {
			t.Fatalf("the vector has no %s header", name)
		}
		mut := flip(val, len(val)*3/4)
		err := v.Verify(vec.request(t, map[string]string{name: string(mut)}), body, at)
		if !errors.Is(err, verify.ErrMismatch) && !errors.Is(err, verify.ErrMalformed) {
			t.Errorf("credential with a byte changed: %v, want a mismatch", err)
		}
	case p.Family == "body-hmac":
		sig := signatureIn(t, p, body)
		i := strings.Index(string(body), sig)
		mut := flip(body, i+len(sig)/2)
		if err := v.Verify(h, mut, at); err == nil {
			t.Errorf("body with a byte of its signature changed is accepted")
		}
	default:
		if len(body) == 0 {
			t.Fatal("body: a vector signs a non-empty body")
		}
		mut := flip(body, len(body)/2)
		err := v.Verify(h, mut, at)
		if !errors.Is(err, verify.ErrMismatch) {
			t.Errorf("body with a byte changed: %v, want ErrMismatch", err)
		}
	}

	// Past the tolerance.
	if p.Timestamp != nil && p.Timestamp.Tolerance != "none" {
		tol := verify.DefaultTolerance
		if p.Timestamp.Tolerance != "" {
			if tol, err = time.ParseDuration(p.Timestamp.Tolerance); err != nil {
				t.Fatal(err)
			}
		}
		// A vector's now is within vectorSkew of its signed timestamp, so
		// tol + vectorSkew either way is outside the tolerance.
		for _, d := range []time.Duration{tol + vectorSkew, -tol - vectorSkew} {
			if err := v.Verify(h, body, at.Add(d)); !errors.Is(err, verify.ErrExpired) {
				t.Errorf("now %+v: %v, want ErrExpired", d, err)
			}
		}
	}

	for _, n := range vec.Negative {
		t.Run(n.Name, func(t *testing.T) {
			want, ok := vectorErrs[n.Err]
			if !ok {
				t.Fatalf("err: %q must be missing, malformed, mismatch or expired", n.Err)
			}
			b := body
			if n.Body != nil {
				b = []byte(*n.Body)
			}
			nat := at
			if n.Now != 0 {
				nat = time.Unix(n.Now, 0)
			}
			err := v.Verify(vec.request(t, n.Headers), b, nat)
			if !errors.Is(err, want) {
				t.Fatalf("err = %v, want %v", err, want)
			}
		})
	}
}

// flip returns b with its i-th byte changed (to another character of the
// same class, so that a hex or base64 value stays well-formed).
func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	switch c := out[i]; {
	case c == 'a':
		out[i] = 'b'
	case c >= '0' && c <= '9':
		out[i] = '0' + (c-'0'+1)%10
	case c >= 'A' && c <= 'Z':
		out[i] = 'A' + (c-'A'+1)%26
	default:
		out[i] = 'a'
	}
	return out
}

// signatureIn reads a body-hmac preset's signature from the body.
func signatureIn(t *testing.T, p *verify.Preset, body []byte) string {
	t.Helper()
	path := strings.TrimPrefix(p.Signature, "json:")
	s, ok := jsonPathString(body, path)
	if !ok || s == "" {
		t.Fatalf("the vector's body has no signature at %s", p.Signature)
	}
	return s
}

// minPresets is the catalogue's floor (issue 21's acceptance: at least 80
// providers, each with its vectors).
const minPresets = 80

// TestCatalogueHoldsEightyPresets: presets.yaml lists at least minPresets
// presets under distinct names, each with its vector file (which
// TestPresetVectors runs): dropping presets below the floor fails here.
func TestCatalogueHoldsEightyPresets(t *testing.T) {
	presets, err := verify.Presets()
	if err != nil {
		t.Fatalf("presets.yaml: %v", err)
	}
	names := map[string]bool{}
	for _, p := range presets {
		if names[p.Name] {
			t.Errorf("preset %q is listed twice", p.Name)
		}
		names[p.Name] = true
		if _, err := os.Stat(filepath.Join(vectorDir, p.Name+".yaml")); err != nil {
			t.Errorf("preset %q has no vector file", p.Name)
		}
	}
	if len(names) < minPresets {
		t.Fatalf("presets.yaml lists %d distinct presets, want at least %d", len(names), minPresets)
	}
}

// TestVectorsHavePresets: every vector file belongs to a preset (a preset
// renamed or dropped leaves no stale vector behind).
func TestVectorsHavePresets(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no vector in " + vectorDir)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if _, ok := verify.LookupPreset(name); !ok {
			t.Errorf("%s: no preset %q in presets.yaml", f, name)
		}
	}
}

// vectorSkew bounds how far a vector's now may be from its signed
// timestamp (the vector files put it a few seconds after).
const vectorSkew = 30 * time.Second
