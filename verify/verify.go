package verify

import (
	"errors"
	"fmt"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

// Headers is what a verifier reads of a request; *fasthttp.RequestHeader
// satisfies it.
type Headers interface {
	Peek(key string) []byte
}

// Verifier checks one request.
type Verifier interface {
	// Verify returns nil when the signature over body is valid at now.
	Verify(h Headers, body []byte, now time.Time) error
	// Name is the verifier type ("stripe", "none", ...).
	Name() string
}

// Sentinel errors; Verify wraps them.
var (
	ErrMissing   = errors.New("verify: signature header missing")
	ErrMalformed = errors.New("verify: signature header malformed")
	ErrMismatch  = errors.New("verify: no signature matches")
	ErrExpired   = errors.New("verify: timestamp outside the tolerance")
)

// DefaultTolerance is how far a signed timestamp may be from now.
const DefaultTolerance = 5 * time.Minute

// New builds the verifier a source's verify section describes: none, the
// generic hmac, or a preset of the catalogue (presets.yaml) by its name.
// Its errors name the field at fault. Every verifier goes through
// withPreset, so verify.event_type works (and verify.handshake_token is
// refused) for none and hmac as for the catalogue's presets.
func New(v config.Verify) (Verifier, error) {
	secrets := collectSecrets(v)
	tol := v.Tolerance.D()
	if tol != 0 && tol < time.Second {
		// Timestamps are whole seconds: a shorter tolerance would be
		// truncated to none and refuse nearly every hook.
		return nil, fmt.Errorf("verify.tolerance: %v is under a second (signed timestamps are whole seconds; omit it for the %v default)", tol, DefaultTolerance)
	}
	if _, err := catalogue(); err != nil {
		return nil, fmt.Errorf("verify.type: the preset catalogue does not load: %w", err)
	}
	var p Preset
	switch v.Type {
	case "none", "hmac":
	default:
		var ok bool
		if p, ok = LookupPreset(v.Type); !ok {
			return nil, fmt.Errorf("verify.type: unknown verifier %q (none, hmac or a preset: `ankusa presets` lists them)", v.Type)
		}
	}
	if v.Type != "none" && len(secrets) == 0 {
		return nil, fmt.Errorf("verify.secret: required by verifier %q", v.Type)
	}
	if v.WebhookID != "" && (v.Type == "none" || v.Type == "hmac") {
		return nil, fmt.Errorf("verify.webhook_id: verifier %q signs no webhook id (only presets whose template has {webhook_id} read it)", v.Type)
	}
	switch v.Type {
	case "none":
		if v.URL != "" {
			return nil, fmt.Errorf("verify.url: verifier none signs nothing (only twilio and presets that sign {url} read it)")
		}
		if v.Tolerance != 0 {
			return nil, fmt.Errorf("verify.tolerance: verifier none checks no timestamp")
		}
		return withPreset(None{}, &Preset{Name: v.Type}, v, secrets)
	case "hmac":
		if v.Tolerance != 0 && v.TimestampHeader == "" {
			return nil, fmt.Errorf("verify.tolerance: needs verify.timestamp_header (without a signed timestamp there is nothing to hold to a tolerance)")
		}
		if tol == 0 {
			tol = DefaultTolerance
		}
		g, err := newGeneric(v, secrets, tol)
		if err != nil {
			return nil, err
		}
		return withPreset(g, &Preset{Name: v.Type}, v, secrets)
	}
	return buildPreset(&p, v, secrets, tol)
}

// collectSecrets lists the resolved secrets (config.Load resolves env: and
// file: references before sources are built).
func collectSecrets(v config.Verify) []string {
	var out []string
	if v.Secret.Value != "" {
		out = append(out, v.Secret.Value)
	}
	for _, s := range v.Secrets {
		if s.Value != "" {
			out = append(out, s.Value)
		}
	}
	return out
}

// None accepts every request (verify: {type: none}).
type None struct{}

// Verify accepts.
func (None) Verify(Headers, []byte, time.Time) error { return nil }

// Name is "none".
func (None) Name() string { return "none" }

// parseUnix parses decimal unix seconds without allocating.
func parseUnix(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 12 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// Refuse rejects every request: the verifier of a source whose verify
// section could not be built (fail closed).
type Refuse struct {
	Type string
	Err  error
}

// Verify refuses.
func (r Refuse) Verify(Headers, []byte, time.Time) error {
	return fmt.Errorf("%w: verifier not built: %v", ErrMismatch, r.Err)
}

// Name is the configured type.
func (r Refuse) Name() string { return r.Type }

// Failure is the envelope's reason code for a Verify error (DESIGN.md
// §2.3: kept with a flagged or quarantined hook so its operator sees why).
func Failure(err error) uint8 {
	switch {
	case err == nil:
		return envelope.FailNone
	case errors.Is(err, ErrMissing):
		return envelope.FailMissing
	case errors.Is(err, ErrMalformed):
		return envelope.FailMalformed
	case errors.Is(err, ErrExpired):
		return envelope.FailExpired
	}
	return envelope.FailMismatch
}
