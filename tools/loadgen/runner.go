package main

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/ankusa/ankusa/tools/loadgen/payload"
)

// maxShards bounds the recorders workers share.
const maxShards = 16

// runner is one run's shared state: the client, the payloads, the targets
// and the recorders. Workers read it; only counters and recorders change.
type runner struct {
	cfg     *Config
	pool    *payload.Pool
	targets *targets
	tmpl    *urlTemplate
	shards  []*recorder
	acked   *ackedLog // nil without -acked
	sent    *sentLog  // nil without -sent
	seed    uint64
	nonce   [4]byte

	cancel      context.CancelCauseFunc
	errCount    atomic.Int64
	windowStart time.Time // start of the measured window
	unsent      int64     // open loop: measured requests never sent
}

// errMaxErrors is the cause of a run stopped by -max-errors.
var errMaxErrors = errors.New("-max-errors reached")

// Run performs the load run cfg describes and returns its summary. The
// summary is nil only when the run could not start; with a non-nil error
// and a summary, the run was cut short (signal, -max-errors) or -acked
// could not be written, and the summary covers what ran.
func Run(ctx context.Context, cfg *Config, logw io.Writer) (*Summary, error) {
	rn, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	if err := probe(cfg.tmpl, cfg.Timeout); err != nil {
		return nil, err
	}
	if cfg.AckedPath != "" {
		if rn.acked, err = openAcked(cfg.AckedPath); err != nil {
			return nil, err
		}
	}
	if cfg.SentPath != "" {
		if rn.sent, err = openSent(cfg.SentPath); err != nil {
			if rn.acked != nil {
				_ = rn.acked.Close()
			}
			return nil, err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rn.cancel = cancel
	switch {
	case cfg.Engine == "epoll":
		if err := rn.runEpoll(ctx); err != nil {
			if rn.acked != nil {
				_ = rn.acked.Close()
			}
			return nil, err
		}
	case cfg.Open():
		rn.runOpen(ctx)
	default:
		rn.runClosed(ctx)
	}
	end := time.Now()
	cause := context.Cause(ctx) // nil unless a signal or -max-errors stopped the run
	if rn.acked != nil {
		if err := rn.acked.Close(); err != nil && cause == nil {
			cause = err
		}
	}
	if rn.sent != nil {
		if err := rn.sent.Close(); err != nil && cause == nil {
			cause = err
		}
	}
	sum, noID := rn.summary(end)
	if noID > 0 {
		fmt.Fprintf(logw, "loadgen: %d 201 answers carried no usable {\"id\"}; they are not in -acked\n", noID)
	}
	return sum, cause
}

// newRunner generates the payloads and builds the client.
func newRunner(cfg *Config) (*runner, error) {
	var seedBytes [12]byte
	_, _ = crand.Read(seedBytes[:])
	rn := &runner{
		cfg:     cfg,
		tmpl:    cfg.tmpl,
		targets: newTargets(cfg),
		seed:    binary.LittleEndian.Uint64(seedBytes[:8]),
	}
	payload.PutBase62(rn.nonce[:], uint64(binary.LittleEndian.Uint32(seedBytes[8:])))
	pool, err := payload.NewPool(cfg.Kind, cfg.Sizes, cfg.PoolPerClass, rn.seed, time.Now())
	if err != nil {
		return nil, err
	}
	rn.pool = pool
	for range min(cfg.Conns, maxShards) {
		rn.shards = append(rn.shards, newRecorder())
	}
	return rn, nil
}

// probe connects to the target once (and, for https, completes the TLS
// handshake) so that "nothing listens" or "its certificate is not trusted"
// is a clear fatal error rather than a run full of failed requests.
func probe(t *urlTemplate, timeout time.Duration) error {
	hc := newHTTPConn(t, timeout, 0)
	if err := hc.dial(); err != nil {
		return fmt.Errorf("cannot connect to %s: %w (is the server running? check -url)", t.probeAddr, err)
	}
	defer hc.close()
	if tc, ok := hc.c.(*tls.Conn); ok {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("cannot complete a TLS handshake with %s: %w (SSL_CERT_FILE names extra trusted certificates)", t.probeAddr, err)
		}
	}
	return nil
}

// countError counts a transport error (warm-up included) against -max-errors.
func (rn *runner) countError(err error) {
	n := rn.errCount.Add(1)
	if limit := rn.cfg.MaxErrors; limit > 0 && n == limit {
		rn.cancel(fmt.Errorf("%w: %d transport errors, the last: %v", errMaxErrors, n, err))
	}
}
