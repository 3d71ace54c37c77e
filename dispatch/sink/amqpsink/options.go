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

// EnsureDefaults fills unset options.
func (o *Options) EnsureDefaults() {
	s := &o.Spec
	if s.Format == "" {
		s.Format = "envelope"
	}
	if s.RoutingKey == "" {
		s.RoutingKey = config.DefaultRoutingKey
	}
	if s.Channels == 0 {
		s.Channels = config.DefaultSinkChannels
	}
	if s.ConnectTimeout == 0 {
		s.ConnectTimeout = config.Duration(config.DefaultSinkConnectTimeout)
	}
	if s.Timeout == 0 {
		s.Timeout = config.Duration(config.DefaultSinkTimeout)
	}
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

// Validate checks the options after EnsureDefaults. Errors name the config
// key to fix and never show the URL's password.
func (o *Options) Validate() error {
	s := &o.Spec
	if s.Type != "" && s.Type != "rabbitmq" {
		return fmt.Errorf("sink type %q is not rabbitmq", s.Type)
	}
	if _, err := amqp.ParseURI(s.URL); err != nil {
		return fmt.Errorf("url: %s is not an AMQP URL (amqp://user:pass@host:port/vhost or amqps://...): %v",
			redactURL(s.URL), withoutURL(err))
	}
	if s.Format != "envelope" && s.Format != "raw" {
		return fmt.Errorf("format: %q must be raw or envelope", s.Format)
	}
	if s.Channels < 1 || s.Channels > 256 {
		return fmt.Errorf("channels: %d must be between 1 and 256", s.Channels)
	}
	if len(s.Exchange) > 255 {
		return fmt.Errorf("exchange: %d bytes, AMQP allows 255", len(s.Exchange))
	}
	if time.Duration(s.ConnectTimeout) <= 0 || time.Duration(s.Timeout) <= 0 {
		return errors.New("connect_timeout and timeout must be positive")
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
