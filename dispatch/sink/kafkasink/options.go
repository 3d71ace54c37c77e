package kafkasink

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
)

// Options configure a Sink.
type Options struct {
	// Spec is the sink's config, defaults applied (config.Load does
	// that); New fills the Kafka defaults again if they are unset. A
	// SASL password is Spec.SASL.Password.Value, resolved by config.
	Spec config.Sink
	// Source is the name of the source the sink belongs to.
	Source string
	// Node is the node's name, for the client id.
	Node string
	// ClientID is the Kafka client id the brokers log and quota by.
	// Default "ankusa/<node>/<source>/<sink id>".
	ClientID string
	Logger   *zap.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// EnsureDefaults fills unset options, the spec's keys with config's sink
// defaults (config.ApplySinkDefaults).
func (o *Options) EnsureDefaults() {
	s := &o.Spec
	if s.Type == "" {
		s.Type = "kafka"
	}
	config.ApplySinkDefaults(s)
	if o.ClientID == "" {
		o.ClientID = "ankusa/" + o.Node + "/" + o.Source + "/" + s.ID
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Validate checks the options after EnsureDefaults by config's sink rules
// (config.CheckSink), the rules the config file is held to. Errors name
// the config key to fix and never show the SASL password.
func (o *Options) Validate() error {
	s := o.Spec
	if s.Type != "kafka" {
		return fmt.Errorf("sink type %q is not kafka", s.Type)
	}
	if probs := config.CheckSink(&s); len(probs) > 0 {
		return errors.New(probs[0])
	}
	return nil
}

// parsed is what New and Check get out of the options.
type parsed struct {
	topic, key *config.Template
	// literalTopic is the topic when the template has no field (checked
	// once here); "" when it depends on the hook.
	literalTopic string
	tls          *tls.Config
}

// parse checks o (after EnsureDefaults) and parses its templates and TLS
// files. It connects to nothing.
func parse(o *Options) (*parsed, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var p parsed
	var err error
	if p.topic, err = config.ParseTemplate(o.Spec.Topic); err != nil {
		return nil, fmt.Errorf("topic: %w", err)
	}
	if parts := p.topic.Parts(); len(parts) == 1 && parts[0].Field == config.TemplateLiteral {
		if err := checkTopicName(parts[0].Text); err != nil {
			return nil, fmt.Errorf("topic: %w", err)
		}
		p.literalTopic = parts[0].Text
	}
	if p.key, err = config.ParseTemplate(o.Spec.Key); err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	if p.tls, err = o.Spec.TLS.ClientConfig(); err != nil {
		return nil, err
	}
	return &p, nil
}

// maxTopicBytes is Kafka's longest topic name.
const maxTopicBytes = 249

// checkTopicName applies Kafka's topic name rules: 1 to 249 characters of
// [a-zA-Z0-9._-], not "." or "..". A broker refuses any other name
// (INVALID_TOPIC_EXCEPTION).
func checkTopicName(t string) error {
	switch {
	case t == "":
		return errors.New("expands to an empty topic name")
	case len(t) > maxTopicBytes:
		return fmt.Errorf("%q is %d bytes, Kafka allows %d", t, len(t), maxTopicBytes)
	case t == "." || t == "..":
		return fmt.Errorf("%q is not a Kafka topic name", t)
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%q holds %q: a Kafka topic name is letters, digits, '.', '_' and '-'", t, c)
		}
	}
	return nil
}
