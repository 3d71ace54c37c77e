package httpsink

import (
	"context"
	"fmt"
	"net"
	"slices"
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

// EnsureDefaults fills what was left out. config applies the same sink
// defaults; they are repeated here for programs that build a Spec by hand.
func (o *Options) EnsureDefaults() {
	if o.Spec.Type == "" {
		o.Spec.Type = "http"
	}
	if o.Spec.Format == "" {
		o.Spec.Format = FormatRaw
	}
	if o.Spec.ConnectTimeout == 0 {
		o.Spec.ConnectTimeout = config.Duration(config.DefaultSinkConnectTimeout)
	}
	if o.Spec.Timeout == 0 {
		o.Spec.Timeout = config.Duration(config.DefaultSinkTimeout)
	}
	if o.Spec.Concurrency == 0 {
		o.Spec.Concurrency = config.DefaultSinkConcurrency
	}
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

// Validate checks what New needs beyond the templates, which New parses.
// An error names the config key, relative to the sink.
func (o *Options) Validate() error {
	s := &o.Spec
	switch {
	case s.Type != "http":
		return fmt.Errorf("type: %q is not an http sink", s.Type)
	case s.URL == "":
		return fmt.Errorf("url: required for an http sink")
	case !slices.Contains([]string{FormatRaw, FormatEnvelope}, s.Format):
		return fmt.Errorf("format: %q must be %s or %s", s.Format, FormatRaw, FormatEnvelope)
	case time.Duration(s.ConnectTimeout) < time.Millisecond:
		return fmt.Errorf("connect_timeout: %v must be at least 1ms", time.Duration(s.ConnectTimeout))
	case time.Duration(s.Timeout) < time.Millisecond:
		return fmt.Errorf("timeout: %v must be at least 1ms", time.Duration(s.Timeout))
	case s.Concurrency < 1 || s.Concurrency > 4096:
		return fmt.Errorf("concurrency: %d must be between 1 and 4096", s.Concurrency)
	}
	return nil
}
