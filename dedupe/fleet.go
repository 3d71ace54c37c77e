package dedupe

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/redisx"
)

// Fleet defaults.
const (
	DefaultLease     = 10 * time.Second
	DefaultNamespace = "ankusa:"
	// DefaultRedisTimeout bounds each dial, read and write to Redis (and
	// the wait for a pooled connection) unless redis.url sets its own
	// (dial_timeout, read_timeout, write_timeout, pool_timeout): a hung
	// Redis costs a request about this much, then the hook goes on
	// without dedupe.
	DefaultRedisTimeout = redisx.DefaultTimeout
)

// Polling another node's pending lease: the first wait, and the longest.
const (
	minPoll = 2 * time.Millisecond
	maxPoll = 50 * time.Millisecond
)

var (
	// ErrBadValue: the key holds a value that is neither a pending lease
	// nor a committed record (someone else wrote it, or garbage).
	ErrBadValue = errors.New("dedupe: fleet key holds a value that is neither pending (p:) nor committed (c:<event id>)")
	// ErrLeaseHeld: the key stayed pending under other claims for longer
	// than a lease.
	ErrLeaseHeld = errors.New("dedupe: fleet key stayed pending for longer than the lease")
)

var (
	fleetErrors      = metrics.NewCounter("ankusa_dedupe_fleet_errors_total")
	fleetWaits       = metrics.NewCounter("ankusa_dedupe_fleet_waits_total")
	fleetClaimed     = metrics.NewCounter(`ankusa_dedupe_fleet_claims_total{outcome="claimed"}`)
	fleetDuplicate   = metrics.NewCounter(`ankusa_dedupe_fleet_claims_total{outcome="duplicate"}`)
	fleetUnavailable = metrics.NewCounter(`ankusa_dedupe_fleet_claims_total{outcome="unavailable"}`)
)

// FleetOptions configure a Fleet.
type FleetOptions struct {
	URL       string        // redis://host:port/db (redis.url)
	Namespace string        // key prefix, default DefaultNamespace; tests pass a unique one
	Lease     time.Duration // pending lease, default DefaultLease
	Logger    *zap.Logger   // nil: no logs
}

// Fleet keeps dedupe keys in Redis, shared by every node of a fleet. A
// key is `<namespace>dd:<tenant>:<source>:<32 hex of Key.Hash>`; its value
// is `p:<random token>` while a claim is pending (expiring after the
// lease) and `c:<event id>` once the hook is committed (expiring after the
// source's ttl).
//
// Every method answers within about the Redis timeouts: when Redis does
// not answer, Claim says Unavailable and the hook goes on without dedupe.
// A Fleet is safe for concurrent use.
type Fleet struct {
	rdb   *redis.Client
	ns    string
	lease time.Duration
	addr  string // redis.url without its password, for logs
	log   *zap.Logger

	logNext    atomic.Int64 // unix ns before which warnings are suppressed
	suppressed atomic.Int64
}

// NewFleet parses the URL (an error names it, without its password) and
// builds the client. It does not need Redis to be up: connections are
// made on use.
func NewFleet(o FleetOptions) (*Fleet, error) {
	rdb, addr, err := redisx.NewClient(o.URL)
	if err != nil {
		return nil, err
	}
	if o.Lease < 0 || o.Lease > 0 && o.Lease < time.Millisecond {
		return nil, fmt.Errorf("dedupe fleet: lease %v must be at least 1ms", o.Lease)
	}
	if o.Lease == 0 {
		o.Lease = DefaultLease
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return &Fleet{
		rdb:   rdb,
		ns:    o.Namespace,
		lease: o.Lease,
		addr:  addr,
		log:   o.Logger,
	}, nil
}

// Outcome is what Claim found.
type Outcome int

// Claim's outcomes.
const (
	Claimed     Outcome = iota + 1 // the caller commits the hook, then calls Commit or Abort
	Duplicate                      // a committed hook holds the key: id is its event id
	Unavailable                    // Redis did not answer: the caller goes on without dedupe (never drop a hook)
)

func (o Outcome) String() string {
	switch o {
	case Claimed:
		return "claimed"
	case Duplicate:
		return "duplicate"
	case Unavailable:
		return "unavailable"
	}
	return "Outcome(" + fmt.Sprint(int(o)) + ")"
}

// Claim is a pending lease on a key, what Commit and Abort need. The zero
// Claim (returned with Duplicate and Unavailable) holds nothing: Commit
// and Abort of it do nothing.
type Claim struct {
	key string // the Redis key
	val string // "p:<token>", this claim's own value
}

// IsZero reports whether c holds no lease.
func (c Claim) IsZero() bool { return c.key == "" }

// Claim takes k for a hook about to be committed.
//
//   - Claimed: k was free (or its last lease had expired) and is now
//     pending under this claim for the lease; commit the hook, then
//     Commit (or Abort if the commit failed).
//   - Duplicate: a committed hook holds k; id is its event id.
//   - Unavailable: no certain answer (Redis did not answer, the key holds
//     a value of neither form, another claim stayed pending for longer
//     than a lease, ctx ended); err says which. Go on without dedupe.
//
// A key pending under another claim is polled (2ms doubling to 50ms, with
// jitter) until it is committed (Duplicate), freed (the key is taken
// again) or its lease runs out, for at most one lease and within ctx.
// err is nil unless the outcome is Unavailable.
func (f *Fleet) Claim(ctx context.Context, k Key) (c Claim, o Outcome, id envelope.ID, err error) {
	c = Claim{key: f.redisKey(k), val: "p:" + crand.Text()}
	deadline := time.Now().Add(f.lease)
	poll := minPoll
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		set, err := f.rdb.SetNX(ctx, c.key, c.val, f.lease).Result()
		if err != nil {
			return Claim{}, f.unavailable(), id, f.redisError(ctx, "claim", c.key, err)
		}
		if set {
			fleetClaimed.Inc()
			return c, Claimed, id, nil
		}
		v, err := f.rdb.Get(ctx, c.key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			// Freed (aborted or expired) between the two calls: take it.
			if time.Now().Before(deadline) {
				continue
			}
			return Claim{}, f.unavailable(), id, ErrLeaseHeld
		case err != nil:
			return Claim{}, f.unavailable(), id, f.redisError(ctx, "claim", c.key, err)
		}
		pending, committed, ok := parseValue(v)
		switch {
		case !ok:
			fleetErrors.Inc()
			f.warn("dedupe fleet: key holds a value of neither form; the hook goes on without dedupe",
				zap.String("key", c.key), zap.String("value", quoteShort(v)))
			return Claim{}, f.unavailable(), id, ErrBadValue
		case !pending:
			fleetDuplicate.Inc()
			return Claim{}, Duplicate, committed, nil
		case v == c.val:
			// Our own lease: a SET whose reply was lost, then retried.
			fleetClaimed.Inc()
			return c, Claimed, id, nil
		}
		// Pending under another claim: wait for its outcome.
		now := time.Now()
		if !now.Before(deadline) {
			f.warn("dedupe fleet: key stayed pending for longer than the lease; the hook goes on without dedupe",
				zap.String("key", c.key), zap.Duration("lease", f.lease))
			return Claim{}, f.unavailable(), id, ErrLeaseHeld
		}
		if poll == minPoll {
			fleetWaits.Inc()
		}
		d := min(poll/2+rand.N(poll/2+1), deadline.Sub(now))
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return Claim{}, f.unavailable(), id, ctx.Err()
		case <-timer.C:
		}
		poll = min(2*poll, maxPoll)
	}
}

// commitScript turns a key into a committed record: ARGV[1] the value
// `c:<event id>`, ARGV[2] the ttl in ms. A key already committed by
// another hook keeps that hook's id (the first committed stays the
// original) and the script answers 0. Anything else is overwritten: our
// own lease, nothing (it expired), another claim's lease taken after ours
// expired (that claim's hook is a duplicate of ours, now committed), or
// garbage.
var commitScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 2) == 'c:' and v ~= ARGV[1] then
	return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// abortScript deletes a key only while it holds this claim's own lease
// (ARGV[1]), so a claim whose lease expired never deletes someone else's.
var abortScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

// Commit records that the hook of claim c was committed as id, for ttl
// (at least 1ms). Call it after the hook's fsync. If another hook was
// committed under the key meanwhile (c's lease expired first), the key
// keeps that one's id. An error (counted and logged) leaves the lease to
// expire: the hook is committed either way.
func (f *Fleet) Commit(ctx context.Context, c Claim, id envelope.ID, ttl time.Duration) error {
	if c.key == "" {
		return nil
	}
	if ttl <= 0 {
		return fmt.Errorf("dedupe: fleet commit: ttl %v is not positive", ttl)
	}
	ms := max(int64((ttl+time.Millisecond-1)/time.Millisecond), 1)
	val := string(id.AppendText([]byte("c:")))
	n, err := commitScript.Run(ctx, f.rdb, []string{c.key}, val, ms).Int()
	if err != nil {
		return f.redisError(ctx, "commit", c.key, err)
	}
	if n == 0 {
		f.log.Debug("dedupe fleet: another hook was committed under the key first; it stays the original",
			zap.String("key", c.key), zap.Stringer("id", id))
	}
	return nil
}

// Abort frees the key of claim c, if it still holds c's own lease: call it
// when the hook's commit failed, so a retry is not kept waiting for the
// lease. An error (counted and logged) leaves the lease to expire.
func (f *Fleet) Abort(ctx context.Context, c Claim) error {
	if c.key == "" {
		return nil
	}
	if err := abortScript.Run(ctx, f.rdb, []string{c.key}, c.val).Err(); err != nil {
		return f.redisError(ctx, "abort", c.key, err)
	}
	return nil
}

// Ping reports whether Redis answers (for boot logs and readiness; Claim
// does not need it).
func (f *Fleet) Ping(ctx context.Context) error {
	if err := f.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("dedupe: fleet redis %s: %w", f.addr, err)
	}
	return nil
}

// Close closes the client's connections.
func (f *Fleet) Close() error { return f.rdb.Close() }

// redisKey is k's key in Redis.
func (f *Fleet) redisKey(k Key) string {
	b := make([]byte, 0, len(f.ns)+len("dd:")+len(k.Tenant)+1+len(k.Source)+1+2*len(k.Hash))
	b = append(b, f.ns...)
	b = append(b, "dd:"...)
	b = append(b, k.Tenant...)
	b = append(b, ':')
	b = append(b, k.Source...)
	b = append(b, ':')
	b = hex.AppendEncode(b, k.Hash[:])
	return string(b)
}

// parseValue reads a stored value: pending (`p:<token>`), committed
// (`c:<event id>`, id), or neither (ok false).
func parseValue(v string) (pending bool, id envelope.ID, ok bool) {
	if len(v) < 3 || v[1] != ':' {
		return false, id, false
	}
	switch v[0] {
	case 'p':
		return true, id, true
	case 'c':
		id, err := envelope.ParseID([]byte(v[2:]))
		return false, id, err == nil
	}
	return false, id, false
}

func (f *Fleet) unavailable() Outcome {
	fleetUnavailable.Inc()
	return Unavailable
}

// redisError counts and logs (throttled) a failed call, and wraps err. An
// error because ctx ended is the caller's doing: neither counted nor
// logged.
func (f *Fleet) redisError(ctx context.Context, op, key string, err error) error {
	if cerr := ended(ctx); cerr != nil {
		// The caller's context ended (go-redis reports it as the
		// connection's i/o timeout when the deadline fires mid-call).
		return fmt.Errorf("dedupe: fleet %s: redis %s: %w (%v)", op, f.addr, cerr, err)
	}
	err = fmt.Errorf("dedupe: fleet %s: redis %s: %w", op, f.addr, err)
	fleetErrors.Inc()
	f.warn("dedupe fleet: redis call failed; hooks go on without fleet dedupe meanwhile",
		zap.String("op", op), zap.String("key", key), zap.Error(err))
	return err
}

// ended is ctx's error, or DeadlineExceeded once its deadline has passed
// even if its timer has not fired yet.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// warn logs at most one line a second, saying how many it suppressed, so
// a Redis outage cannot flood the log from the hot path.
func (f *Fleet) warn(msg string, fields ...zap.Field) {
	now := time.Now().UnixNano()
	n := f.logNext.Load()
	if now < n || !f.logNext.CompareAndSwap(n, now+int64(time.Second)) {
		f.suppressed.Add(1)
		return
	}
	if s := f.suppressed.Swap(0); s > 0 {
		fields = append(fields, zap.Int64("suppressed", s))
	}
	f.log.Warn(msg, fields...)
}

// quoteShort quotes the start of a value for a log line.
func quoteShort(v string) string {
	const n = 64
	if len(v) > n {
		return fmt.Sprintf("%q...(%d bytes)", v[:n], len(v))
	}
	return fmt.Sprintf("%q", v)
}
