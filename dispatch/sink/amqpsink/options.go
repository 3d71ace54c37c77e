package amqpsink

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
)

// heartbeat is the AMQP heartbeat the sink asks for: a dead broker or a
// dead path is noticed within about two of them.
const heartbeat = 10 * time.Second

// Options configure a Sink.
type Options struct {
	// Spec is the sink's config, defaults applied (config.Load does
	// that); New fills the RabbitMQ defaults again if they are unset.
	Spec config.Sink
	// Source is the name of the source the sink belongs to.
	Source string
	// Node is the node's name, for the connection name.
	Node string
	// ConnectionName is sent as the client property connection_name, so
	// an operator finds this sink's connection in the management UI and
	// in rabbitmqctl list_connections. Default
	// "ankusa/<node>/<source>/<sink id>".
	ConnectionName string
	Logger         *zap.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// EnsureDefaults fills unset options, the spec's keys with config's sink
// defaults (config.ApplySinkDefaults).
func (o *Options) EnsureDefaults() {
	s := &o.Spec
	if s.Type == "" {
		s.Type = "rabbitmq"
	}
	config.ApplySinkDefaults(s)
	if o.ConnectionName == "" {
		o.ConnectionName = "ankusa/" + o.Node + "/" + o.Source + "/" + s.ID
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Validate checks the options after EnsureDefaults: the url with the AMQP
// client's own parser, the rest by config's sink rules (config.CheckSink),
// the rules the config file is held to. Errors name the config key to fix
// and never show the URL's password.
func (o *Options) Validate() error {
	s := o.Spec
	if s.Type == "" {
		s.Type = "rabbitmq"
	}
	if s.Type != "rabbitmq" {
		return fmt.Errorf("sink type %q is not rabbitmq", s.Type)
	}
	if _, err := amqp.ParseURI(s.URL); err != nil {
		return fmt.Errorf("url: %s is not an AMQP URL (amqp://user:pass@host:port/vhost or amqps://...): %v",
			redactURL(s.URL), withoutURL(err))
	}
	if probs := config.CheckSink(&s); len(probs) > 0 {
		return errors.New(probs[0])
	}
	return nil
}

// redactURL hides a URL's password.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// withoutURL drops the URL that a *url.Error quotes (password included)
// and keeps its reason.
func withoutURL(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}
