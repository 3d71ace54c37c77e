package httpsink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
)

// Body formats (config key format).
const (
	// FormatRaw sends the hook's body as received, with its Content-Type.
	FormatRaw = "raw"
	// FormatEnvelope sends the envelope's JSON form (envelope.AppendJSON).
	FormatEnvelope = "envelope"
)

// Options configure an HTTP sink.
type Options struct {
	// Spec is the sink's config, with config's defaults applied.
	Spec config.Sink
	// Source is the name of the source the sink belongs to (for logs).
	Source string
	// Logger logs the sink's setup, never an attempt: the dispatcher logs
	// and counts attempts. Default: no logging.
	Logger *zap.Logger
	// Now is the clock of webhook-timestamp and of Retry-After dates;
	// it is called concurrently. Default: time.Now.
	Now func() time.Time
	// LookupIP resolves a receiver's host name for the SSRF guard; the
	// sink connects to the addresses it returns and never resolves the
	// name again for that connection. It is called concurrently.
	// Default: net.DefaultResolver's LookupIP for "ip" (IPv4 and IPv6).
	LookupIP func(ctx context.Context, host string) ([]net.IP, error)
}

// EnsureDefaults fills what was left out: the spec's keys with config's
// sink defaults (config.ApplySinkDefaults), which a spec loaded from the
// config already has, for programs that build a Spec by hand.
func (o *Options) EnsureDefaults() {
	if o.Spec.Type == "" {
		o.Spec.Type = "http"
	}
	config.ApplySinkDefaults(&o.Spec)
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LookupIP == nil {
		o.LookupIP = func(ctx context.Context, host string) ([]net.IP, error) {
			return net.DefaultResolver.LookupIP(ctx, "ip", host)
		}
	}
}

// Validate checks the spec by config's sink rules (config.CheckSink), the
// rules the config file is held to; the url and the templates are New's
// to parse. An error names the config key, relative to the sink.
func (o *Options) Validate() error {
	if o.Spec.Type != "http" {
		return fmt.Errorf("type: %q is not an http sink", o.Spec.Type)
	}
	if probs := config.CheckSink(&o.Spec); len(probs) > 0 {
		return errors.New(probs[0])
	}
	return nil
}
