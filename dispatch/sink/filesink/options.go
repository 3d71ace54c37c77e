package filesink

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
)

// Options configure a Sink.
type Options struct {
	// Spec is the sink's config, defaults applied (config.Load does
	// that; EnsureDefaults does it again for a spec built in Go).
	Spec config.Sink
	// Source is the name of the source the sink belongs to.
	Source string
	// Logger logs the file's opening and its failures to open, never an
	// attempt: the dispatcher logs those.
	Logger *zap.Logger
}

// EnsureDefaults fills unset options, the spec's keys with config's sink
// defaults (config.ApplySinkDefaults).
func (o *Options) EnsureDefaults() {
	if o.Spec.Type == "" {
		o.Spec.Type = "file"
	}
	config.ApplySinkDefaults(&o.Spec)
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// Validate checks the options after EnsureDefaults by config's sink rules
// (config.CheckSink, the rules the config file is held to). An error
// names the key relative to the sink.
func (o *Options) Validate() error {
	if o.Spec.Type != "file" {
		return fmt.Errorf("sink type %q is not file", o.Spec.Type)
	}
	if probs := config.CheckSink(&o.Spec); len(probs) > 0 {
		return errors.New(probs[0])
	}
	return nil
}
