package dedupe

import (
	"context"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/redistest"
)

// fleetEnv is one test's Redis: the shared server's URL, a namespace of
// the test's own (deleted at the end) and a client to look at keys.
type fleetEnv struct {
	t   *testing.T
	url string
	ns  string
	rdb *redis.Client
}

func newFleetEnv(t *testing.T) *fleetEnv {
	t.Helper()
	u := redistest.URL(t)
	return &fleetEnv{t: t, url: u, ns: redistest.Namespace(t, u), rdb: redistest.Client(t, u)}
}

// fleet is a Fleet (a node) on the test's namespace, closed at the end.
func (e *fleetEnv) fleet(lease time.Duration) *Fleet {
	e.t.Helper()
	return openFleet(e.t, e.url, e.ns, lease)
}

func openFleet(t *testing.T, url, ns string, lease time.Duration) *Fleet {
	t.Helper()
	f, err := NewFleet(FleetOptions{URL: url, Namespace: ns, Lease: lease, Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// redisKey is where k lives, spelled out as the layout says.
func (e *fleetEnv) redisKey(k Key) string {
	return e.ns + "dd:" + k.Tenant + ":" + k.Source + ":" + hex.EncodeToString(k.Hash[:])
}

func (e *fleetEnv) value(k Key) (string, bool) {
	e.t.Helper()
	v, err := e.rdb.Get(context.Background(), e.redisKey(k)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return v, true
}

func (e *fleetEnv) pttl(k Key) time.Duration {
	e.t.Helper()
	d, err := e.rdb.PTTL(context.Background(), e.redisKey(k)).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// waitGone waits until k's key has expired.
func (e *fleetEnv) waitGone(k Key, within time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, ok := e.value(k); !ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("key %s still there after %v", e.redisKey(k), within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fleetID(seq uint64) envelope.ID { return envelope.MakeID(1_760_000_000_000, 3, seq) }

type fleetResult struct {
	c   Claim
	o   Outcome
	id  envelope.ID
	err error
	d   time.Duration
}

func tryClaim(t *testing.T, f *Fleet, k Key) fleetResult {
	t.Helper()
	return tryClaimCtx(context.Background(), f, k)
}

func tryClaimCtx(ctx context.Context, f *Fleet, k Key) fleetResult {
	start := time.Now()
	c, o, id, err := f.Claim(ctx, k)
	return fleetResult{c, o, id, err, time.Since(start)}
}

func (r fleetResult) want(t *testing.T, o Outcome) fleetResult {
	t.Helper()
	if r.o != o {
		t.Fatalf("Claim: %v (err %v, id %v) after %v; want %v", r.o, r.err, r.id, r.d, o)
	}
	if (r.err != nil) != (o == Unavailable) {
		t.Fatalf("Claim: %v with err %v", r.o, r.err)
	}
	if r.c.IsZero() != (o != Claimed) {
		t.Fatalf("Claim: %v with claim %+v", r.o, r.c)
	}
	return r
}

// goClaim claims in a goroutine; the result comes on the channel.
func goClaim(f *Fleet, k Key) <-chan fleetResult {
	ch := make(chan fleetResult, 1)
	go func() { ch <- tryClaimCtx(context.Background(), f, k) }()
	return ch
}

// stillWaiting checks the claim has not returned within d.
func stillWaiting(t *testing.T, ch <-chan fleetResult, d time.Duration) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("the second claimer did not wait for the pending lease: %v after %v", r.o, r.d)
	case <-time.After(d):
	}
}

func recvClaim(t *testing.T, ch <-chan fleetResult) fleetResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting claimer did not return within 5s")
		return fleetResult{}
	}
}

var tctx = context.Background()

// TestFleetClaimCommitDuplicate breaks on: the key layout or values, a
// claim that does not take the key, a commit that does not record the id
// and ttl, a duplicate that is not found, keys of other tenants, sources
// or hashes that collide.
func TestFleetClaimCommitDuplicate(t *testing.T) {
	e := newFleetEnv(t)
	f := e.fleet(10 * time.Second)
	k := MakeKey("acme", "stripe", []byte("evt_1"))

	r := tryClaim(t, f, k).want(t, Claimed)
	v, ok := e.value(k)
	if !ok || !strings.HasPrefix(v, "p:") || len(v) < 10 {
		t.Fatalf("pending value %q, %v", v, ok)
	}
	if d := e.pttl(k); d <= 9*time.Second || d > 10*time.Second {
		t.Fatalf("pending lease PTTL %v, want about 10s", d)
	}

	id := fleetID(7)
	if err := f.Commit(tctx, r.c, id, time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, _ := e.value(k); v != "c:"+id.String() {
		t.Fatalf("committed value %q, want c:%s", v, id)
	}
	if d := e.pttl(k); d <= 59*time.Minute || d > time.Hour {
		t.Fatalf("committed PTTL %v, want about 1h", d)
	}

	d := tryClaim(t, f, k).want(t, Duplicate)
	if d.id != id {
		t.Fatalf("duplicate of %v, want %v", d.id, id)
	}
	// Another node sees it too.
	if d := tryClaim(t, e.fleet(0), k).want(t, Duplicate); d.id != id {
		t.Fatalf("other node: duplicate of %v, want %v", d.id, id)
	}
	for _, other := range []Key{
		MakeKey("acme", "stripe", []byte("evt_2")),
		MakeKey("globex", "stripe", []byte("evt_1")),
		MakeKey("acme", "github", []byte("evt_1")),
	} {
		tryClaim(t, f, other).want(t, Claimed)
	}
	// Commit and Abort of the zero Claim (Duplicate, Unavailable) do nothing.
	if err := f.Commit(tctx, Claim{}, id, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := f.Abort(tctx, Claim{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(tctx, r.c, id, 0); err == nil {
		t.Fatal("Commit with a zero ttl: no error")
	}
}

// TestFleetAbortFreesKey breaks on an Abort that leaves the lease.
func TestFleetAbortFreesKey(t *testing.T) {
	e := newFleetEnv(t)
	f := e.fleet(10 * time.Second)
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	r := tryClaim(t, f, k).want(t, Claimed)
	if err := f.Abort(tctx, r.c); err != nil {
		t.Fatal(err)
	}
	if v, ok := e.value(k); ok {
		t.Fatalf("key still holds %q after Abort", v)
	}
	tryClaim(t, f, k).want(t, Claimed)
}

// TestFleetWaiterSeesDuplicate breaks on a second claimer that does not
// wait for the first's pending lease, or does not see its commit.
func TestFleetWaiterSeesDuplicate(t *testing.T) {
	e := newFleetEnv(t)
	a, b := e.fleet(10*time.Second), e.fleet(10*time.Second)
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	ra := tryClaim(t, a, k).want(t, Claimed)
	ch := goClaim(b, k)
	stillWaiting(t, ch, 150*time.Millisecond)
	id := fleetID(1)
	if err := a.Commit(tctx, ra.c, id, time.Hour); err != nil {
		t.Fatal(err)
	}
	rb := recvClaim(t, ch).want(t, Duplicate)
	if rb.id != id {
		t.Fatalf("duplicate of %v, want %v", rb.id, id)
	}
	if rb.d < 150*time.Millisecond {
		t.Fatalf("the waiter returned after %v", rb.d)
	}
}

// TestFleetWaiterTakesAbortedKey breaks on a waiter that gives up, or
// reports a duplicate, when the first claimer's commit failed.
func TestFleetWaiterTakesAbortedKey(t *testing.T) {
	e := newFleetEnv(t)
	a, b := e.fleet(10*time.Second), e.fleet(10*time.Second)
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	ra := tryClaim(t, a, k).want(t, Claimed)
	ch := goClaim(b, k)
	stillWaiting(t, ch, 100*time.Millisecond)
	if err := a.Abort(tctx, ra.c); err != nil {
		t.Fatal(err)
	}
	rb := recvClaim(t, ch).want(t, Claimed)
	id := fleetID(2)
	if err := b.Commit(tctx, rb.c, id, time.Hour); err != nil {
		t.Fatal(err)
	}
	if r := tryClaim(t, a, k).want(t, Duplicate); r.id != id {
		t.Fatalf("duplicate of %v, want %v", r.id, id)
	}
}

// TestFleetLeaseExpires breaks on a lease without an expiry, or a waiter
// that does not take the key once the vanished holder's lease ran out.
func TestFleetLeaseExpires(t *testing.T) {
	e := newFleetEnv(t)
	holder := e.fleet(200 * time.Millisecond)
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	tryClaim(t, holder, k).want(t, Claimed)
	_ = holder.Close() // the node vanishes without Commit or Abort
	r := tryClaim(t, e.fleet(10*time.Second), k).want(t, Claimed)
	if r.d < 100*time.Millisecond || r.d > 2*time.Second {
		t.Fatalf("the waiter took the key after %v; the holder's lease was 200ms", r.d)
	}
}

// TestFleetLeaseHeldTooLong breaks on a waiter that waits longer than its
// own lease (a key kept pending, e.g. by a holder with a longer lease).
func TestFleetLeaseHeldTooLong(t *testing.T) {
	e := newFleetEnv(t)
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	tryClaim(t, e.fleet(time.Minute), k).want(t, Claimed)
	r := tryClaim(t, e.fleet(150*time.Millisecond), k).want(t, Unavailable)
	if !errors.Is(r.err, ErrLeaseHeld) {
		t.Fatalf("err %v, want ErrLeaseHeld", r.err)
	}
	if r.d < 100*time.Millisecond || r.d > time.Second {
		t.Fatalf("gave up after %v; its lease is 150ms", r.d)
	}
}

// TestFleetContextEnds breaks on a waiter that outlives its request.
func TestFleetContextEnds(t *testing.T) {
	e := newFleetEnv(t)
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	tryClaim(t, e.fleet(time.Minute), k).want(t, Claimed)
	c, cancel := context.WithTimeout(tctx, 100*time.Millisecond)
	defer cancel()
	r := tryClaimCtx(c, e.fleet(time.Minute), k).want(t, Unavailable)
	if !errors.Is(r.err, context.DeadlineExceeded) || r.d > time.Second {
		t.Fatalf("err %v after %v", r.err, r.d)
	}
}

// TestFleetCommittedExpires breaks on a committed record without the
// source's ttl.
func TestFleetCommittedExpires(t *testing.T) {
	e := newFleetEnv(t)
	f := e.fleet(10 * time.Second)
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	r := tryClaim(t, f, k).want(t, Claimed)
	if err := f.Commit(tctx, r.c, fleetID(1), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := e.pttl(k); d <= 0 || d > 300*time.Millisecond {
		t.Fatalf("committed PTTL %v, want at most 300ms", d)
	}
	tryClaim(t, f, k).want(t, Duplicate)
	e.waitGone(k, 2*time.Second)
	tryClaim(t, f, k).want(t, Claimed)
}

// TestFleetAbortKeepsOthersLease breaks on an Abort (or Commit) that
// clobbers what another claim holds after this claim's lease expired.
func TestFleetAbortKeepsOthersLease(t *testing.T) {
	e := newFleetEnv(t)
	a, b := e.fleet(150*time.Millisecond), e.fleet(10*time.Second)
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	ra := tryClaim(t, a, k).want(t, Claimed)
	e.waitGone(k, 2*time.Second) // a's lease ran out (a slow commit)
	rb := tryClaim(t, b, k).want(t, Claimed)
	if err := a.Abort(tctx, ra.c); err != nil {
		t.Fatal(err)
	}
	if v, ok := e.value(k); !ok || v != rb.c.val {
		t.Fatalf("after a's late Abort the key holds %q, %v; want b's lease %q", v, ok, rb.c.val)
	}

	// a's hook did commit after all: its record wins over b's pending
	// lease (b's hook is the duplicate), and b's later commit or abort
	// leaves it.
	ida, idb := fleetID(1), fleetID(2)
	if err := a.Commit(tctx, ra.c, ida, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(tctx, rb.c, idb, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := b.Abort(tctx, rb.c); err != nil {
		t.Fatal(err)
	}
	if v, _ := e.value(k); v != "c:"+ida.String() {
		t.Fatalf("key holds %q, want a's record", v)
	}
	if r := tryClaim(t, b, k).want(t, Duplicate); r.id != ida {
		t.Fatalf("duplicate of %v, want %v", r.id, ida)
	}
}

// TestFleetConcurrentClaims: many nodes claim one key at once. Breaks on
// two winners, or a loser that does not see the winner's id.
func TestFleetConcurrentClaims(t *testing.T) {
	e := newFleetEnv(t)
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	const n = 8
	fleets := make([]*Fleet, n)
	for i := range fleets {
		fleets[i] = e.fleet(10 * time.Second)
	}
	id := fleetID(9)
	results := make([]fleetResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = tryClaimCtx(tctx, fleets[i], k)
			if results[i].o == Claimed {
				time.Sleep(30 * time.Millisecond) // the WAL commit
				results[i].err = fleets[i].Commit(tctx, results[i].c, id, time.Hour)
			}
		}()
	}
	close(start)
	wg.Wait()
	claimed := 0
	for i, r := range results {
		switch {
		case r.o == Claimed && r.err == nil:
			claimed++
		case r.o == Duplicate && r.id == id:
		default:
			t.Errorf("node %d: %v, id %v, err %v", i, r.o, r.id, r.err)
		}
	}
	if claimed != 1 {
		t.Fatalf("%d nodes claimed the key, want 1", claimed)
	}
}

// TestFleetBadValues: a key holding something this package did not write
// (or garbage) is Unavailable for that request, quickly: never a crash, a
// wait, a duplicate or an error-free Claimed.
func TestFleetBadValues(t *testing.T) {
	e := newFleetEnv(t)
	f := e.fleet(10 * time.Second)
	for i, v := range []string{"garbage", "c:", "p:", "c:evt_notanid", "c:" + fleetID(1).String() + "x", "x:y", "\x00\xff"} {
		k := MakeKey("acme", "stripe", []byte{byte(i)})
		if err := e.rdb.Set(tctx, e.redisKey(k), v, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		before := fleetErrors.Get()
		r := tryClaim(t, f, k).want(t, Unavailable)
		if !errors.Is(r.err, ErrBadValue) || r.d > time.Second {
			t.Errorf("value %q: err %v after %v, want ErrBadValue at once", v, r.err, r.d)
		}
		if fleetErrors.Get() != before+1 {
			t.Errorf("value %q: ankusa_dedupe_fleet_errors_total not counted", v)
		}
		if got, _ := e.value(k); got != v {
			t.Errorf("value %q was changed to %q", v, got)
		}
	}
	// A key of another type: Redis answers WRONGTYPE.
	k := MakeKey("acme", "stripe", []byte("hash"))
	if err := e.rdb.HSet(tctx, e.redisKey(k), "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	r := tryClaim(t, f, k).want(t, Unavailable)
	if r.d > time.Second {
		t.Errorf("WRONGTYPE: Unavailable after %v", r.d)
	}
}

// TestFleetUnreachable breaks on a dead Redis that blocks a request, or
// is not reported Unavailable, or makes NewFleet fail.
func TestFleetUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	f := openFleet(t, "redis://"+closed+"/0", "ankusa-test:unreachable:", 10*time.Second)
	k := MakeKey("acme", "stripe", []byte("evt_1"))
	for i := range 20 { // through the pool's dial circuit breaker too
		r := tryClaim(t, f, k).want(t, Unavailable)
		if r.d > 500*time.Millisecond {
			t.Fatalf("claim %d: Unavailable after %v", i, r.d)
		}
	}
	start := time.Now()
	if err := f.Commit(tctx, Claim{key: "x", val: "p:x"}, fleetID(1), time.Hour); err == nil {
		t.Fatal("Commit: no error")
	}
	if err := f.Abort(tctx, Claim{key: "x", val: "p:x"}); err == nil {
		t.Fatal("Abort: no error")
	}
	if err := f.Ping(tctx); err == nil {
		t.Fatal("Ping: no error")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Commit, Abort and Ping took %v", d)
	}
}

// TestFleetHungRedis: a server that accepts and never answers costs a
// request about the read timeout, then Unavailable.
func TestFleetHungRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	f := openFleet(t, "redis://"+ln.Addr().String()+"/0", "ankusa-test:hung:", 10*time.Second)
	for i := range 3 {
		r := tryClaim(t, f, MakeKey("acme", "stripe", []byte("evt_1"))).want(t, Unavailable)
		if r.d > 3*DefaultRedisTimeout {
			t.Fatalf("claim %d: Unavailable after %v (timeout %v)", i, r.d, DefaultRedisTimeout)
		}
	}
}

// TestFleetRedisRestart: a private Redis stopped mid-test: Claim is
// Unavailable (quickly) while it is down, Claimed again once it is back.
func TestFleetRedisRestart(t *testing.T) {
	srv := redistest.StartServer(t)
	f := openFleet(t, srv.URL(), "ankusa-test:restart:", 10*time.Second)
	n := 0
	next := func() Key { n++; return MakeKey("acme", "stripe", []byte{byte(n)}) }
	tryClaim(t, f, next()).want(t, Claimed)

	srv.Stop()
	for i := range 5 {
		r := tryClaim(t, f, next()).want(t, Unavailable)
		if r.d > 500*time.Millisecond {
			t.Fatalf("claim %d while Redis is down: Unavailable after %v", i, r.d)
		}
	}

	srv.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := tryClaim(t, f, next())
		if r.o == Claimed {
			break
		}
		if r.o != Unavailable {
			t.Fatalf("after the restart: %v", r.o)
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %v 10s after Redis came back: %v", r.o, r.err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// And it stays so.
	for range 5 {
		tryClaim(t, f, next()).want(t, Claimed)
	}
}

func TestNewFleetErrors(t *testing.T) {
	for _, c := range []struct {
		o    FleetOptions
		want string
	}{
		{FleetOptions{}, "redis.url: empty"},
		{FleetOptions{URL: "http://127.0.0.1:6379"}, `redis.url "http://127.0.0.1:6379": `},
		{FleetOptions{URL: "redis://u:s3cret@127.0.0.1:6379/notadb"}, `redis.url "redis://u:xxxxx@127.0.0.1:6379/notadb": `},
		{FleetOptions{URL: "redis://u:s3cret@127.0.0.1:port/0"}, `redis.url: not a URL`},
		{FleetOptions{URL: "redis://127.0.0.1:6379/0", Lease: -time.Second}, "lease -1s must be at least 1ms"},
		{FleetOptions{URL: "redis://127.0.0.1:6379/0", Lease: time.Microsecond}, "lease 1µs must be at least 1ms"},
	} {
		_, err := NewFleet(c.o)
		if err == nil {
			t.Errorf("NewFleet(%+v): no error", c.o)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("NewFleet(%+v): %v; want it to contain %q and no password", c.o, err, c.want)
		}
	}
	// Redis need not be up: nothing is dialled.
	f, err := NewFleet(FleetOptions{URL: "redis://127.0.0.1:1/0"})
	if err != nil {
		t.Fatal(err)
	}
	if f.lease != DefaultLease || f.ns != DefaultNamespace {
		t.Fatalf("defaults: lease %v, namespace %q", f.lease, f.ns)
	}
	f.Close()
}

func TestOutcomeString(t *testing.T) {
	for o, s := range map[Outcome]string{Claimed: "claimed", Duplicate: "duplicate", Unavailable: "unavailable", 0: "Outcome(0)"} {
		if o.String() != s {
			t.Errorf("%d: %q", int(o), o.String())
		}
	}
}
