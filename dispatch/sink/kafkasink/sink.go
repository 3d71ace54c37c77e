package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// Sink produces hooks to Kafka with acks=all and the idempotent producer
// (see the package doc). It is safe for concurrent use.
type Sink struct {
	o        Options
	p        *parsed
	raw      bool
	timeout  time.Duration
	log      *zap.Logger
	password string // scrubbed from library errors, just in case
	cl       *kgo.Client

	soloMu  sync.Mutex
	solo    *kgo.Client   // one record at a time; made on first need
	soloSem chan struct{} // held from a solo Produce until its promise

	closed   atomic.Bool
	loudLast atomic.Int64 // unix nanos of the last loud log
}

var _ dispatch.Sink = (*Sink)(nil)

// New checks o and returns the sink with its client. It does not wait for
// the cluster: the client connects on the first Deliver, so a cluster that
// is down at boot does not stop the node.
func New(o Options) (*Sink, error) {
	o.EnsureDefaults()
	p, err := parse(&o)
	if err == nil && o.Spec.SASL != nil && o.Spec.SASL.Password.Value == "" {
		err = errors.New("sasl.password: resolves to an empty value")
	}
	if err != nil {
		return nil, fmt.Errorf("kafka sink %q of source %q: %w", o.Spec.ID, o.Source, err)
	}
	s := &Sink{
		o:       o,
		p:       p,
		raw:     o.Spec.Format == "raw",
		timeout: time.Duration(o.Spec.Timeout),
		soloSem: make(chan struct{}, 1),
	}
	if a := o.Spec.SASL; a != nil {
		s.password = a.Password.Value
	}
	s.log = o.Logger.With(zap.String("sink", o.Spec.ID), zap.String("source", o.Source),
		zap.Strings("brokers", o.Spec.Brokers), zap.String("topic", o.Spec.Topic))
	if s.cl, err = kgo.NewClient(s.clientOpts()...); err != nil {
		return nil, fmt.Errorf("kafka sink %q of source %q: %s", o.Spec.ID, o.Source, s.scrub(err))
	}
	return s, nil
}

// Check reports what New would refuse in spec, connecting to nothing (it
// reads the TLS files); an error names the key relative to the sink.
// check-config calls it (config.ValidateOptions.CheckSink).
func Check(spec config.Sink) error {
	o := Options{Spec: spec}
	o.EnsureDefaults()
	_, err := parse(&o)
	return err
}

// clientOpts are the franz-go options of the sink's clients.
func (s *Sink) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	sp := &s.o.Spec
	opts := []kgo.Opt{
		kgo.SeedBrokers(sp.Brokers...),
		kgo.ClientID(s.o.ClientID),
		kgo.RequiredAcks(kgo.AllISRAcks()), // and the idempotent producer, franz-go's default
		kgo.ProducerBatchCompression(codec(sp.Compression)),
		// No linger: a hook's attempt waits for its record, and at most
		// the sink's concurrency wait at once, so a 10 ms linger (the
		// client's default) capped a sink at concurrency / 10 ms
		// (3,200 hooks/s at 32). Records still batch: those that come
		// while a produce request is in flight go in the next one.
		kgo.ProducerLinger(0),
		kgo.DialTimeout(time.Duration(sp.ConnectTimeout)),
		kgo.ProduceRequestTimeout(max(s.timeout, 100*time.Millisecond)),
		kgo.RecordDeliveryTimeout(recordTimeout(s.timeout)),
		kgo.WithLogger(kgoLogger{s.log}),
	}
	if s.p.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(s.p.tls))
	}
	if a := sp.SASL; a != nil {
		switch a.Mechanism {
		case "plain":
			opts = append(opts, kgo.SASL(plain.Auth{User: a.Username, Pass: a.Password.Value}.AsMechanism()))
		case "scram-sha-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: a.Username, Pass: a.Password.Value}.AsSha256Mechanism()))
		case "scram-sha-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: a.Username, Pass: a.Password.Value}.AsSha512Mechanism()))
		}
	}
	return append(opts, extra...)
}

// recordTimeout is how long franz-go keeps a record it could not send
// (no connection, authentication failing): a tenth less than the attempt,
// so that it fails the record with its last error ("last err: ...")
// before the attempt gives up without one; at least 1 s, franz-go's
// floor.
func recordTimeout(attempt time.Duration) time.Duration {
	return max(attempt-attempt/10, time.Second)
}

// codec is the producer's batch compression for the compression key.
func codec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// Durable is true: Deliver answers nil only for a record that every
// in-sync replica of its partition has (acks=all).
func (s *Sink) Durable() bool { return true }

// Deliver produces one hook and waits for its acknowledgement, for at
// most Spec.Timeout and until ctx is done. Records of concurrent calls
// share batches and produce requests (the package doc). It returns nil
// only for an acknowledged record. Every error is a *dispatch.Error,
// retryable but for a record the cluster will never take (ErrRefused),
// which is permanent. An error does not mean the record is not in the
// topic (at-least-once). Deliver does not keep d.
func (s *Sink) Deliver(ctx context.Context, d *dispatch.Delivery) error {
	d.Status = 0
	if s.closed.Load() {
		return wrap(classRetry, ErrClosed)
	}
	r, bp, err := s.build(d)
	if err != nil {
		return permanent(err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err, owned := s.produce(ctx, s.cl, r, bp, nil)
	c := classify(err)
	if err != nil && c == classRecord {
		// A broker refused the batch the record was in. The batch may
		// have held other hooks too: only the record alone decides.
		soloTotal.Inc()
		err, owned = s.produceAlone(ctx, clone(r), bp)
		c = classify(err)
	}
	if owned {
		putBuf(bp)
	}
	if err == nil {
		ackedTotal.Inc()
		return nil
	}
	return s.fail(c, r, err)
}

// fail builds the error of a failed produce and logs what an operator
// must see.
func (s *Sink) fail(c class, r *kgo.Record, err error) error {
	msg := s.scrub(err)
	switch c {
	case classNoAck:
		return wrap(c, fmt.Errorf("%w within the attempt (timeout %v) for topic %q: %s; the record may still be at the broker",
			ErrNoAck, s.timeout, r.Topic, msg))
	case classUnauthorized:
		if s.loud() {
			s.log.Error("the Kafka cluster refuses this sink's credentials or ACLs; hooks are retried until an operator fixes sasl or the topic's ACLs",
				zap.String("error", msg), zap.String("record_topic", r.Topic))
		}
		return wrap(c, fmt.Errorf("cannot produce to topic %q: %s (check sasl.username, sasl.password and the ACLs: WRITE on the topic, IDEMPOTENT_WRITE on the cluster)", r.Topic, msg))
	case classRefused, classRecord:
		if s.loud() {
			s.log.Warn("the Kafka cluster refuses a record; the hook is dead-lettered",
				zap.String("error", msg), zap.String("record_topic", r.Topic), zap.Int("value_bytes", len(r.Value)))
		}
		return wrap(c, fmt.Errorf("topic %q refuses the record (%d value bytes): %s (raise the topic's max.message.bytes or set a claim: on the sink)", r.Topic, len(r.Value), msg))
	case classAnswered:
		return wrap(c, fmt.Errorf("cannot produce to topic %q: %s (the sink creates no topics)", r.Topic, msg))
	}
	return wrap(c, fmt.Errorf("cannot produce to topic %q at %s: %s", r.Topic, strings.Join(s.o.Spec.Brokers, ","), msg))
}

// flight is one record between Produce and its promise. The promise and
// a Deliver that gives up race for it: whichever comes second owns the
// record's buffer and releases it, so that the buffer is never reused
// while franz-go may still read it.
type flight struct {
	state atomic.Int32 // flightWaiting, flightAnswered, flightAbandoned
	done  chan error
	bp    *[]byte
}

const (
	flightWaiting int32 = iota
	flightAnswered
	flightAbandoned
)

// produce hands r to cl and waits for its promise or ctx. owned reports
// whether the caller still owns bp (false: an abandoned record's promise
// releases it). done, when not nil, runs when the promise does.
func (s *Sink) produce(ctx context.Context, cl *kgo.Client, r *kgo.Record, bp *[]byte, done func()) (err error, owned bool) { //nolint:revive // err first reads as the result
	f := &flight{done: make(chan error, 1), bp: bp}
	// The record does not get ctx: franz-go fails a whole partition's
	// buffer when the first record of a batch it retries has a done
	// context, which would fail the hooks of other Deliver calls with
	// this one's timeout. The record ends by its own delivery timeout
	// (recordTimeout), a little shorter than the attempt.
	cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
		if done != nil {
			done()
		}
		if f.state.CompareAndSwap(flightWaiting, flightAnswered) {
			f.done <- err
			return
		}
		putBuf(f.bp)
	})
	select {
	case err := <-f.done:
		return err, true
	case <-ctx.Done():
		if f.state.CompareAndSwap(flightWaiting, flightAbandoned) {
			return ctx.Err(), false
		}
		return <-f.done, true
	}
}

// produceAlone produces r through the solo client, whose batches hold one
// record: records wait their turn (soloSem, until ctx is done), so that
// the client's Produce never blocks on its one-record buffer.
func (s *Sink) produceAlone(ctx context.Context, r *kgo.Record, bp *[]byte) (err error, owned bool) { //nolint:revive // as produce
	cl, err := s.soloClient()
	if err != nil {
		return err, true
	}
	select {
	case s.soloSem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting to produce the record alone: %w", ctx.Err()), true
	}
	return s.produce(ctx, cl, r, bp, func() { <-s.soloSem })
}

// soloClient returns the client that produces one record at a time, so
// that a batch holds that record only.
func (s *Sink) soloClient() (*kgo.Client, error) {
	s.soloMu.Lock()
	defer s.soloMu.Unlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if s.solo == nil {
		cl, err := kgo.NewClient(s.clientOpts(kgo.MaxBufferedRecords(1), kgo.ProducerLinger(0))...)
		if err != nil {
			return nil, err
		}
		s.solo = cl
	}
	return s.solo, nil
}

// Close closes the clients: records not yet acknowledged fail (they may
// or may not be in the topic). Deliver after Close fails with ErrClosed.
func (s *Sink) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cl.Close()
	s.soloMu.Lock()
	solo := s.solo
	s.soloMu.Unlock()
	if solo != nil {
		solo.Close()
	}
	return nil
}

// loud reports whether a failure worth an operator's attention may be
// logged now: at most one such line per loudEvery.
func (s *Sink) loud() bool {
	now := s.o.Now().UnixNano()
	last := s.loudLast.Load()
	return now-last >= int64(loudEvery) && s.loudLast.CompareAndSwap(last, now)
}

const loudEvery = 10 * time.Second

// scrub renders a library error without the SASL password.
func (s *Sink) scrub(err error) string {
	msg := err.Error()
	if len(s.password) >= 3 {
		msg = strings.ReplaceAll(msg, s.password, "xxxxx")
	}
	return msg
}

// kgoLogger passes franz-go's errors to zap; its chatter below that level
// (reconnects, metadata refreshes) is left out.
type kgoLogger struct{ l *zap.Logger }

func (k kgoLogger) Level() kgo.LogLevel { return kgoLevel }

// kgoLevel is the level franz-go logs at (tests raise it to debug).
var kgoLevel = kgo.LogLevelError

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if level > kgoLevel || level == kgo.LogLevelNone {
		return
	}
	fs := make([]zap.Field, 0, len(keyvals)/2)
	for i := 0; i+1 < len(keyvals); i += 2 {
		k, _ := keyvals[i].(string)
		fs = append(fs, zap.Any(k, keyvals[i+1]))
	}
	k.l.Error("kafka client: "+msg, fs...)
}
