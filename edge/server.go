package edge

import (
	"fmt"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
)

// transportSlack is how far past limits.max_header_bytes fasthttp's read
// buffer goes: the router answers 400 invalid_header up to there, and only
// a header block past the buffer gets 431 (from transportError).
const transportSlack = 8 << 10

// NewServer returns the public listener's fasthttp server for r.
func NewServer(r *Router, lim config.Limits, logger *zap.Logger) *fasthttp.Server {
	r.hooked.Store(true)
	return &fasthttp.Server{
		Handler:                      r.Handle,
		HeaderReceived:               r.HeaderReceived,
		ErrorHandler:                 transportError,
		Name:                         "",
		Concurrency:                  lim.MaxConnections + connSlack,
		ReadBufferSize:               int(lim.MaxHeaderBytes) + transportSlack,
		WriteBufferSize:              4 << 10,
		ReadTimeout:                  lim.ReadTimeout.D(),
		WriteTimeout:                 lim.WriteTimeout.D(),
		IdleTimeout:                  lim.IdleTimeout.D(),
		MaxRequestBodySize:           int(lim.MaxBodyBytes),
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		NoDefaultServerHeader:        true,
		NoDefaultDate:                true,
		NoDefaultContentType:         true,
		CloseOnShutdown:              true,
		Logger:                       fasthttpLogger{logger},
	}
}

type fasthttpLogger struct{ l *zap.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	f.l.Debug(fmt.Sprintf(format, args...), zap.String("component", "fasthttp"))
}
