package cli

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/dispatch/sink/amqpsink"
	"github.com/ankusa/ankusa/dispatch/sink/filesink"
	"github.com/ankusa/ankusa/dispatch/sink/httpsink"
	"github.com/ankusa/ankusa/dispatch/sink/kafkasink"
	"github.com/ankusa/ankusa/dispatch/sink/natssink"
)

// newSink builds the sink of a source's sink spec.
func newSink(cfg *config.Config, log *zap.Logger) func(string, config.Sink) (dispatch.Sink, error) {
	return func(src string, spec config.Sink) (dispatch.Sink, error) {
		// The broker sinks name their source and sink in their own log
		// lines (with the broker's address); the http sink is given them.
		switch spec.Type {
		case "http":
			return httpsink.New(httpsink.Options{Spec: spec, Source: src, Logger: log.With(zap.String("source", src), zap.String("sink", spec.ID))})
		case "rabbitmq":
			return amqpsink.New(amqpsink.Options{Spec: spec, Source: src, Node: cfg.Node.Name, Logger: log})
		case "kafka":
			return kafkasink.New(kafkasink.Options{Spec: spec, Source: src, Node: cfg.Node.Name, Logger: log})
		case "nats":
			return natssink.New(natssink.Options{Spec: spec, Source: src, Node: cfg.Node.Name, Logger: log})
		case "file":
			return filesink.New(filesink.Options{Spec: spec, Source: src, Logger: log})
		}
		return nil, fmt.Errorf("unknown sink type %q", spec.Type)
	}
}
