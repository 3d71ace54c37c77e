package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

var claimSeq atomic.Uint64

// claimHook is a hook of tenant t and source s with a body of n bytes of
// its own (every byte a function of the seq).
func claimHook(t, s string, n int) *envelope.Envelope {
	seq := claimSeq.Add(1)
	body := make([]byte, n)
	r := rand.New(rand.NewPCG(seq, 7))
	for i := range body {
		body[i] = byte(r.Uint32())
	}
	return &envelope.Envelope{Seq: seq, ID: envelope.MakeID(uint64(time.Now().UnixMilli()), 1, seq), TenantID: t, SourceID: s,
		ReceivedAt: time.Now().UnixNano(), Body: body}
}

func openTestClaims(t *testing.T, b Backend, mod func(*ClaimsOptions)) *Claims {
	t.Helper()
	o := ClaimsOptions{
		Stores: map[string]config.ClaimStore{"packs": {Type: "dir", Prefix: "pre",
			PackBytes: 1 << 20, PackDelay: config.Duration(50 * time.Millisecond), Retain: config.Duration(7 * 24 * time.Hour)}},
		Backends: map[string]Backend{"packs": b},
		Node:     "edge-1",
	}
	if mod != nil {
		mod(&o)
	}
	c, err := OpenClaims(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func listKeys(t *testing.T, b Backend, prefix string) []string {
	t.Helper()
	var keys []string
	if err := b.List(context.Background(), prefix, func(o Object) error { keys = append(keys, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	return keys
}

// claimAll claims every hook at once and returns the references in order.
func claimAll(t *testing.T, c *Claims, hooks []*envelope.Envelope) []envelope.Claim {
	t.Helper()
	refs := make([]envelope.Claim, len(hooks))
	errs := make([]error, len(hooks))
	var wg sync.WaitGroup
	for i, e := range hooks {
		wg.Go(func() { refs[i], errs[i] = c.Claim(context.Background(), "packs", e) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
	}
	return refs
}

// TestClaimsPackAndRead: 100 claims of one tenant and source at once go
// into a few packs, not 100 objects, under the tenant's prefix; every
// reference reads back the exact body; another tenant gets packs of its
// own; a second claim of the same hook reuses the reference.
func TestClaimsPackAndRead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		c := openTestClaims(t, b, nil)
		var hooks []*envelope.Envelope
		for i := range 100 {
			hooks = append(hooks, claimHook("t1", "s1", 1000+i*300))
		}
		hooks = append(hooks, claimHook("t2", "s1", 5000))
		refs := claimAll(t, c, hooks)
		keys := listKeys(t, b, "pre/claims/")
		// 100 bodies of about 2.2 MiB in packs of 1 MiB: 3 to 4 packs per
		// full flush, a few more when the 50ms timer splits a burst.
		if len(keys) < 3 || len(keys) > 12 {
			t.Fatalf("%d objects for 101 claims, want a few packs: %v", len(keys), keys)
		}
		for i, ref := range refs {
			want := "pre/claims/tenant=" + hooks[i].TenantID + "/source=s1/" + time.Now().UTC().Format("2006/01/02") + "/edge-1-"
			if !strings.HasPrefix(ref.Key, want) || !strings.HasSuffix(ref.Key, ".pack") {
				t.Fatalf("claim %d key %q, want %s...pack", i, ref.Key, want)
			}
			got, err := c.Read(context.Background(), ref)
			if err != nil {
				t.Fatalf("read claim %d: %v", i, err)
			}
			if !bytes.Equal(got, hooks[i].Body) {
				t.Fatalf("claim %d reads back %d bytes that differ from the body's %d", i, len(got), len(hooks[i].Body))
			}
		}
		again, err := c.Claim(context.Background(), "packs", hooks[7])
		if err != nil || again != refs[7] {
			t.Fatalf("second claim of a hook: %+v, %v; want %+v", again, err, refs[7])
		}
		if n := len(listKeys(t, b, "pre/claims/")); n != len(keys) {
			t.Fatalf("a second claim of a hook made a pack: %d objects, had %d", n, len(keys))
		}
		if c.room.inUse() != 0 {
			t.Fatalf("%d bytes still held after every upload", c.room.inUse())
		}
		if _, err := c.Read(context.Background(), envelope.Claim{Store: "nope", Key: refs[0].Key, Length: 1, SHA256: refs[0].SHA256}); !errors.Is(err, ErrUnknownStore) {
			t.Fatalf("read from an unknown store: %v", err)
		}
		long := refs[0]
		long.Length = 1 << 40
		if _, err := c.Read(context.Background(), long); !errors.Is(err, ErrClaimTooLong) {
			t.Fatalf("read of a claim of 1TiB: %v, want ErrClaimTooLong", err)
		}
		gone := refs[0]
		gone.Key = strings.Replace(gone.Key, ".pack", "0.pack", 1)
		if _, err := c.Read(context.Background(), gone); !errors.Is(err, ErrNotExist) {
			t.Fatalf("read of a missing pack: %v, want ErrNotExist", err)
		}
	})
}

// TestClaimsCorruptPack: a flipped byte in a pack fails the read of the
// body holding it, naming the key; the other bodies still read.
func TestClaimsCorruptPack(t *testing.T) {
	root := filepath.Join(t.TempDir(), "claims")
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	c := openTestClaims(t, d, nil)
	hooks := []*envelope.Envelope{claimHook("t1", "s1", 3000), claimHook("t1", "s1", 4000)}
	refs := claimAll(t, c, hooks)
	if refs[0].Key != refs[1].Key {
		t.Fatalf("two claims at once went to two packs: %s, %s", refs[0].Key, refs[1].Key)
	}
	second := refs[1]
	if refs[0].Offset > refs[1].Offset {
		second = refs[0]
	}
	path := filepath.Join(root, filepath.FromSlash(second.Key))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[second.Offset+second.Length/2] ^= 0x20
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = c.Read(context.Background(), second)
	if !errors.Is(err, ErrClaimMismatch) || !strings.Contains(err.Error(), second.Key) {
		t.Fatalf("read of a damaged body: %v, want ErrClaimMismatch naming %s", err, second.Key)
	}
	first := refs[0]
	if first == second {
		first = refs[1]
	}
	if _, err := c.Read(context.Background(), first); err != nil {
		t.Fatalf("the undamaged body of the pack: %v", err)
	}
}

// faultyBackend fails Put while fail is set, and holds every Put while
// hold is non-nil until it is closed.
type faultyBackend struct {
	Backend
	fail atomic.Bool
	mu   sync.Mutex
	hold chan struct{}
	puts atomic.Int32
}

func (f *faultyBackend) Put(ctx context.Context, key string, r io.Reader, size int64, sum string) error {
	f.puts.Add(1)
	f.mu.Lock()
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if f.fail.Load() {
		return errors.New("injected: the store is down")
	}
	return f.Backend.Put(ctx, key, r, size, sum)
}

// TestClaimsUploadFailure: a failed upload fails every claim waiting on
// the pack, leaves no object and no held bytes, and the retries succeed.
func TestClaimsUploadFailure(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		fb := &faultyBackend{Backend: b}
		c := openTestClaims(t, fb, nil)
		fb.fail.Store(true)
		var hooks []*envelope.Envelope
		for range 10 {
			hooks = append(hooks, claimHook("t1", "s1", 2000))
		}
		var failed atomic.Int32
		var wg sync.WaitGroup
		for _, e := range hooks {
			wg.Go(func() {
				if _, err := c.Claim(context.Background(), "packs", e); err != nil {
					if !strings.Contains(err.Error(), "claims.stores.packs") || !strings.Contains(err.Error(), "injected") {
						t.Errorf("upload failure: %v, want it to name the store and the cause", err)
					}
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		if failed.Load() != 10 {
			t.Fatalf("%d of 10 claims failed with the store down", failed.Load())
		}
		if keys := listKeys(t, b, "pre/"); len(keys) != 0 {
			t.Fatalf("objects after failed uploads: %v", keys)
		}
		if c.room.inUse() != 0 {
			t.Fatalf("%d bytes held after failed uploads", c.room.inUse())
		}
		fb.fail.Store(false)
		refs := claimAll(t, c, hooks)
		for i, ref := range refs {
			got, err := c.Read(context.Background(), ref)
			if err != nil || !bytes.Equal(got, hooks[i].Body) {
				t.Fatalf("retried claim %d: %v", i, err)
			}
		}
	})
}

// TestClaimsRoomBound: with uploads stuck, the bytes held in packs stay
// under MaxOpenBytes, a claim past it waits (and gives up with its
// context), and every claim completes once the uploads go through.
func TestClaimsRoomBound(t *testing.T) {
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fb := &faultyBackend{Backend: d, hold: make(chan struct{})}
	const body, bound = 32 << 10, 256 << 10
	c := openTestClaims(t, fb, func(o *ClaimsOptions) {
		st := o.Stores["packs"]
		st.PackBytes = 64 << 10
		st.PackDelay = config.Duration(time.Millisecond)
		o.Stores["packs"] = st
		o.MaxOpenBytes = bound
	})
	var wg sync.WaitGroup
	var done atomic.Int32
	for i := range 20 {
		wg.Go(func() {
			e := claimHook("t1", fmt.Sprintf("s%d", i), body)
			if _, err := c.Claim(context.Background(), "packs", e); err != nil {
				t.Errorf("claim %d: %v", i, err)
			}
			done.Add(1)
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.room.inUse() < bound && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if got := c.room.inUse(); got != bound {
		t.Fatalf("%d bytes held with uploads stuck, want the bound %d", got, bound)
	}
	if done.Load() != 0 {
		t.Fatalf("%d claims returned before their packs were uploaded", done.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Claim(ctx, "packs", claimHook("t2", "s1", body)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a claim past the bound: %v, want it to wait until its context ends", err)
	}
	fb.mu.Lock()
	close(fb.hold)
	fb.hold = nil
	fb.mu.Unlock()
	wg.Wait()
	if done.Load() != 20 || c.room.inUse() != 0 {
		t.Fatalf("after the uploads: %d claims done, %d bytes held", done.Load(), c.room.inUse())
	}
}

// TestClaimsRetention: a sweep deletes this node's packs opened before
// min(now - retain, the oldest pending hook), and keeps the others: a
// newer pack, another node's, and one newer than the oldest pending hook.
func TestClaimsRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
		var clock atomic.Int64
		var oldest atomic.Int64 // 0: nothing pending
		mk := func(node string) *Claims {
			return openTestClaims(t, b, func(o *ClaimsOptions) {
				o.Node = node
				o.Now = func() time.Time { return time.Unix(0, clock.Load()) }
				o.OldestPending = func() (time.Time, bool) { return time.Unix(0, oldest.Load()), oldest.Load() != 0 }
			})
		}
		c, other := mk("edge-1"), mk("edge-2")
		claimAt := func(c *Claims, at time.Time) envelope.Claim {
			clock.Store(at.UnixNano())
			ref, err := c.Claim(context.Background(), "packs", claimHook("t1", "s1", 1000))
			if err != nil {
				t.Fatal(err)
			}
			return ref
		}
		day := 24 * time.Hour
		a := claimAt(c, now.Add(-10*day))
		bOther := claimAt(other, now.Add(-10*day))
		cRef := claimAt(c, now.Add(-8*day))
		d := claimAt(c, now.Add(-time.Hour))
		clock.Store(now.UnixNano())
		exists := func(ref envelope.Claim) bool {
			_, err := b.Stat(context.Background(), ref.Key)
			return err == nil
		}
		oldest.Store(now.Add(-9 * day).UnixNano())
		n, err := c.Sweep(context.Background(), "packs")
		if err != nil || n != 1 {
			t.Fatalf("sweep with a hook pending since 9 days: %d deleted, %v; want 1", n, err)
		}
		if exists(a) || !exists(bOther) || !exists(cRef) || !exists(d) {
			t.Fatalf("after the first sweep: a %v, other node's %v, 8 days %v, 1 hour %v; want only a gone",
				exists(a), exists(bOther), exists(cRef), exists(d))
		}
		oldest.Store(0)
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { c.Run(ctx); close(ran) }()
		deadline := time.Now().Add(5 * time.Second)
		for exists(cRef) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-ran
		if exists(cRef) || !exists(bOther) || !exists(d) {
			t.Fatalf("after Run with nothing pending: 8 days %v, other node's %v, 1 hour %v; want only the 8-day pack gone",
				exists(cRef), exists(bOther), exists(d))
		}
	})
}

// TestClaimsDeleteTenant: deleting tenant t1's claims among 20 tenants
// removes exactly its packs (t10..t19 stay), in every store.
func TestClaimsDeleteTenant(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		c := openTestClaims(t, b, nil)
		var hooks []*envelope.Envelope
		for i := 1; i <= 20; i++ {
			for s := range 2 {
				hooks = append(hooks, claimHook(fmt.Sprintf("t%d", i), fmt.Sprintf("s%d", s), 1500))
			}
		}
		refs := claimAll(t, c, hooks)
		before := listKeys(t, b, "pre/claims/")
		mine := listKeys(t, b, "pre/claims/tenant=t1/")
		if len(mine) != 2 {
			t.Fatalf("tenant t1 has %d packs, want 2 (one per source)", len(mine))
		}
		n, err := c.DeleteTenant(context.Background(), "t1")
		if err != nil || n != len(mine) {
			t.Fatalf("DeleteTenant: %d, %v; want %d", n, err, len(mine))
		}
		after := listKeys(t, b, "pre/claims/")
		if len(after) != len(before)-len(mine) {
			t.Fatalf("%d objects after deleting t1's %d of %d", len(after), len(mine), len(before))
		}
		for _, k := range after {
			if strings.HasPrefix(k, "pre/claims/tenant=t1/") {
				t.Fatalf("t1's pack %s is still there", k)
			}
		}
		for i, ref := range refs {
			_, err := c.Read(context.Background(), ref)
			if hooks[i].TenantID == "t1" {
				if !errors.Is(err, ErrNotExist) {
					t.Fatalf("read of an erased tenant's claim: %v", err)
				}
				// The cache forgot it: a new claim packs again.
				again, err := c.Claim(context.Background(), "packs", hooks[i])
				if err != nil || again.Key == ref.Key {
					t.Fatalf("claim after the erase reused the deleted pack: %+v, %v", again, err)
				}
			} else if err != nil {
				t.Fatalf("tenant %s's claim after t1's erase: %v", hooks[i].TenantID, err)
			}
		}
		if _, err := c.DeleteTenant(context.Background(), ""); err == nil {
			t.Fatal("DeleteTenant of an empty name deleted")
		}
	})
}

// TestBackendDelete: Delete removes one object and a missing key is not
// an error; DeletePrefix removes exactly the prefix's objects.
func TestBackendDelete(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		ctx := context.Background()
		put := func(key string) {
			t.Helper()
			if err := b.Put(ctx, key, strings.NewReader("x"), 1, "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range []string{"a/1", "a/2", "ab/1", "a/sub/3", "b"} {
			put(k)
		}
		if err := b.Delete(ctx, "a/1"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Stat(ctx, "a/1"); !errors.Is(err, ErrNotExist) {
			t.Fatalf("stat after delete: %v", err)
		}
		if err := b.Delete(ctx, "a/1"); err != nil {
			t.Fatalf("delete of a missing key: %v", err)
		}
		n, err := DeletePrefix(ctx, b, "a/")
		if err != nil || n != 2 {
			t.Fatalf("DeletePrefix a/: %d, %v; want 2", n, err)
		}
		if got := strings.Join(listKeys(t, b, ""), ","); got != "ab/1,b" {
			t.Fatalf("left: %s, want ab/1,b", got)
		}
		if _, err := DeletePrefix(ctx, b, ""); err == nil {
			t.Fatal("DeletePrefix with an empty prefix deleted")
		}
	})
}

func TestParsePackKey(t *testing.T) {
	at := time.Date(2026, 12, 5, 1, 2, 3, 4, time.UTC)
	key := Layout{Prefix: "p/"}.PackKey("acme", "stripe", "edge-1", at, 9)
	if want := "p/claims/tenant=acme/source=stripe/2026/12/05/edge-1-" + fmt.Sprintf("%016x", at.UnixNano()) + "00000009.pack"; key != want {
		t.Fatalf("PackKey %q, want %q", key, want)
	}
	for _, tc := range []struct {
		key  string
		node string
		ok   bool
	}{
		{key, "edge-1", true},
		{"claims/tenant=a/source=b/2026/12/05/n-" + strings.Repeat("0", 24) + ".pack", "n", true},
		{"claims/x/n-" + strings.Repeat("0", 23) + ".pack", "", false},
		{"claims/x/n-" + strings.Repeat("g", 24) + ".pack", "", false},
		{"claims/x/-" + strings.Repeat("0", 24) + ".pack", "", false},
		{"claims/x/n-" + strings.Repeat("0", 24), "", false},
	} {
		node, got, ok := parsePackKey(tc.key)
		if ok != tc.ok || node != tc.node || (ok && tc.key == key && !got.Equal(at)) {
			t.Errorf("parsePackKey(%q) = %q, %v, %v", tc.key, node, got, ok)
		}
	}
	l := Layout{}
	good := l.PackKey("a", "s", "edge-1", time.Unix(1700000000, 0), 3)
	if !ClaimKeyInTenant(l, good, "a") || ClaimKeyInTenant(l, strings.Replace(good, "tenant=a/", "tenant=ab/", 1), "a") ||
		ClaimKeyInTenant(l, "claims/tenant=a/", "a") {
		t.Fatal("ClaimKeyInTenant confuses tenants a and ab")
	}
	for _, bad := range []string{
		strings.Replace(good, "source=s/", "source=s/../../tenant=b/source=s/", 1),
		strings.Replace(good, "source=s/", "source=../", 1),
		strings.Replace(good, "/2023/", "/20x3/", 1),
		good + "/x",
		strings.TrimSuffix(good, ".pack"),
		strings.Replace(good, "edge-1-", "-", 1),
	} {
		if ClaimKeyInTenant(l, bad, "a") {
			t.Errorf("ClaimKeyInTenant took %q as tenant a's", bad)
		}
	}
}

// TestClaimsSameHookAtOnce: two claims of one hook at once (two sinks of
// its source) get the same reference, and the body is packed once.
func TestClaimsSameHookAtOnce(t *testing.T) {
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := openTestClaims(t, d, nil)
	e := claimHook("t1", "s1", 5000)
	refs := claimAll(t, c, []*envelope.Envelope{e, e, e})
	if refs[0] != refs[1] || refs[1] != refs[2] {
		t.Fatalf("three claims of one hook: %+v", refs)
	}
	obj, err := d.Stat(context.Background(), refs[0].Key)
	if err != nil || obj.Size != 5000 {
		t.Fatalf("the pack holds %d bytes (%v), want the body once", obj.Size, err)
	}
}

// TestClaimsManyTenants: 800 bodies of 16-64 KiB from 20 tenants and 2
// sources each, claimed at once: every claim reads back to its exact
// body, packs are shared (far fewer objects than claims, each under its
// tenant's prefix), and deleting one tenant removes exactly its packs.
func TestClaimsManyTenants(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		c := openTestClaims(t, b, nil)
		var hooks []*envelope.Envelope
		for i := range 800 {
			hooks = append(hooks, claimHook(fmt.Sprintf("t%d", i%20+1), fmt.Sprintf("s%d", i/20%2), 16<<10+(i*977)%(48<<10)))
		}
		refs := claimAll(t, c, hooks)
		keys := listKeys(t, b, "pre/claims/")
		if len(keys) > 200 {
			t.Fatalf("%d objects for 800 claims", len(keys))
		}
		packs := map[string]string{} // key -> tenant
		for i, ref := range refs {
			if want := "pre/claims/tenant=" + hooks[i].TenantID + "/source=" + hooks[i].SourceID + "/"; !strings.HasPrefix(ref.Key, want) {
				t.Fatalf("claim %d in %s, want under %s", i, ref.Key, want)
			}
			packs[ref.Key] = hooks[i].TenantID
			got, err := c.Read(context.Background(), ref)
			if err != nil || !bytes.Equal(got, hooks[i].Body) {
				t.Fatalf("claim %d: %v (equal %v)", i, err, bytes.Equal(got, hooks[i].Body))
			}
		}
		if len(packs) != len(keys) {
			t.Fatalf("%d objects, %d packs named by claims", len(keys), len(packs))
		}
		want := 0
		for _, tn := range packs {
			if tn == "t1" {
				want++
			}
		}
		n, err := c.DeleteTenant(context.Background(), "t1")
		if err != nil || n != want {
			t.Fatalf("DeleteTenant t1: %d, %v; want its %d packs", n, err, want)
		}
		if left := listKeys(t, b, "pre/claims/"); len(left) != len(keys)-want {
			t.Fatalf("%d objects left, want %d", len(left), len(keys)-want)
		}
		t.Logf("%d claims (%d tenants) in %d packs; t1's %d packs deleted", len(refs), 20, len(keys), want)
	})
}

// TestClaimPackFormat pins a pack's bytes: the bodies back to back, each
// claim's offset and length its place, nothing else in the object.
func TestClaimPackFormat(t *testing.T) {
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := openTestClaims(t, d, nil)
	a, b := claimHook("t1", "s1", 1), claimHook("t1", "s1", 1)
	a.Body, b.Body = []byte("first body"), []byte("second")
	refs := claimAll(t, c, []*envelope.Envelope{a, b})
	if refs[0].Key != refs[1].Key {
		t.Fatalf("two claims at once in two packs: %v", refs)
	}
	r, err := d.Get(context.Background(), refs[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(r)
	r.Close()
	want := "first bodysecond"
	if refs[0].Offset != 0 {
		want = "secondfirst body"
	}
	if string(data) != want || refs[0].Length != 10 || refs[1].Length != 6 {
		t.Fatalf("pack %q, claims %+v; want %q", data, refs, want)
	}
	sum := sha256.Sum256(a.Body)
	if refs[0].SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("claim sha256 %s, want the body's %x", refs[0].SHA256, sum)
	}
}

// A retry of a hook reuses its reference while the pack is there, and
// packs the body anew once the pack is gone (retention, a tenant's claims
// deleted): a reference to a deleted pack is never handed out again.
func TestClaimsRetryAfterPackGone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		c := openTestClaims(t, b, nil)
		e := claimHook("acme", "s", 4096)
		ctx := context.Background()
		first, err := c.Claim(ctx, "packs", e)
		if err != nil {
			t.Fatal(err)
		}
		again, err := c.Claim(ctx, "packs", e)
		if err != nil || again != first {
			t.Fatalf("retry while the pack is there: %+v %v, want %+v", again, err, first)
		}
		if err := b.Delete(ctx, first.Key); err != nil {
			t.Fatal(err)
		}
		third, err := c.Claim(ctx, "packs", e)
		if err != nil {
			t.Fatal(err)
		}
		if third.Key == first.Key {
			t.Fatalf("retry after the pack was deleted named it again: %s", third.Key)
		}
		body, err := c.Read(ctx, third)
		if err != nil || !bytes.Equal(body, e.Body) {
			t.Fatalf("the new reference reads %d bytes, %v", len(body), err)
		}
	})
}
