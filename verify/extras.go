package verify

import "github.com/ankusa/ankusa/config"

// withPreset gives a preset's verifier what the preset says beyond the
// signature: where its event type is (EventTyper) and its subscription
// handshake (Handshaker). c is the source's verify section, whose
// event_type and handshake_token override or complete the preset's. Its
// errors name the key at fault (verify.event_type, verify.handshake_token).
func withPreset(v Verifier, p *Preset, c config.Verify, secrets []string) (Verifier, error) {
	spec := p.EventType
	if c.EventType != "" {
		spec = c.EventType
	}
	var et *eventType
	if spec != "" {
		var err error
		if et, err = parseEventType(spec); err != nil {
			return nil, err
		}
	}
	hs, err := newHandshake(v, p, c, secrets)
	if err != nil {
		return nil, err
	}
	switch {
	case et != nil && hs != nil:
		return &typedHandshaking{v, et, hs}, nil
	case et != nil:
		return &typed{v, et}, nil
	case hs != nil:
		return &handshaking{v, hs}, nil
	}
	return v, nil
}

// The verifier of a preset with an event type, a handshake, or both: the
// signature is still the family's (Verify and Name are promoted), and the
// edge finds the rest by a type assertion on EventTyper and Handshaker.
type (
	typed struct {
		Verifier
		*eventType
	}
	handshaking struct {
		Verifier
		*handshake
	}
	typedHandshaking struct {
		Verifier
		*eventType
		*handshake
	}
)

var (
	_ EventTyper = (*typed)(nil)
	_ Handshaker = (*handshaking)(nil)
	_ EventTyper = (*typedHandshaking)(nil)
	_ Handshaker = (*typedHandshaking)(nil)
)

// Extend is withPreset for a verifier built outside New (a program's own
// scheme, or a family under test): it gives v what preset p says beyond
// the signature, its event type and its handshake, with c's event_type
// and handshake_token, and c's secrets as the handshake's keys.
func Extend(v Verifier, p *Preset, c config.Verify) (Verifier, error) {
	return withPreset(v, p, c, collectSecrets(c))
}
