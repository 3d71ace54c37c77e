package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/ankusa/ankusa/config"
)

func newLogger(c config.Log) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.Set(c.Level); err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	zc := zap.NewProductionConfig()
	if c.Format == "console" {
		zc = zap.NewDevelopmentConfig()
		zc.DisableStacktrace = true
	}
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.Sampling = nil
	return zc.Build()
}

// fatalStorage is the OnFatal of the storage stages: nothing past a failed
// write or sync is acknowledged; stop at once (DESIGN.md §6 item 8).
func fatalStorage(log *zap.Logger) func(error) {
	return func(err error) {
		log.Error("storage failure: stopping the node", zap.Error(err))
		_ = log.Sync()
		os.Exit(exitFatal)
	}
}

// redactURL is u with its password replaced, for logs.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable)"
	}
	return p.Redacted()
}

// redisLogger routes go-redis's own lines (failed dials at the start of an
// outage) into the node's log.
type redisLogger struct{ log *zap.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn(fmt.Sprintf(format, v...))
}
