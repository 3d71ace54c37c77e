package source

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ankusa/ankusa/internal/redistest"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/secrets"
)

// rewrapFixture is a stopped node's meta store (persistent records and a
// mirror) and a redis namespace, each holding one source sealed under the
// previous key, one in clear and one under the current key.
type rewrapFixture struct {
	m         *meta.Store
	rdb       *redis.Client
	u, ns     string
	oldKR, kr *secrets.Keyring
	// current is the record sealed under the current key, in every place.
	current []byte
}

// The names of the fixture's sources, and how many secrets each rewrap
// touches: 7 under the previous key, 7 in clear.
var rewrapNames = []string{"prev", "clear", "cur"}

const rewrapSecrets = 14

func newRewrapFixture(t *testing.T) *rewrapFixture {
	t.Helper()
	u := redistest.URL(t)
	x := &rewrapFixture{
		m: openMeta(t, t.TempDir()), u: u, ns: redistest.Namespace(t, u), rdb: redistest.Client(t, u),
		oldKR: testKeyring(t, testKey(1), nil), kr: testKeyring(t, testKey(2), testKey(1)),
	}
	t.Cleanup(func() { x.m.Close() })
	records := map[string][]byte{
		"prev":  encodeSourceRecord(sealedSource(t, "prev"), x.oldKR),
		"clear": encodeSourceRecord(sealedSource(t, "clear"), nil),
		"cur":   encodeSourceRecord(sealedSource(t, "cur"), x.kr),
	}
	x.current = records["cur"]
	b := x.m.NewBatch()
	for i, name := range rewrapNames {
		b.PutSource("acme", name, records[name])
		b.PutMirrored(meta.MirrorSource, "acme", name, uint64(i+1), records[name])
	}
	if err := b.Commit(meta.Sync); err != nil {
		t.Fatal(err)
	}
	b.Close()
	ctx := context.Background()
	k := newFleetKeys(x.ns)
	if err := x.rdb.Set(ctx, k.epoch, "e1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range rewrapNames {
		ok, err := k.rewrite(ctx, x.rdb, "e1", "m1", change{member: sourceMember(name), tenant: "acme", name: name}, records[name])
		if err != nil || !ok {
			t.Fatalf("planting %s: %v %v", name, ok, err)
		}
	}
	return x
}

func (x *rewrapFixture) options(t *testing.T) RewrapOptions {
	return RewrapOptions{Config: testConfig(t), Keyring: x.kr, Meta: x.m, Redis: x.rdb, Addr: x.u, Namespace: x.ns}
}

// records is what each place holds of the fixture's sources: part →
// name → record.
func (x *rewrapFixture) records(t *testing.T) map[string]map[string][]byte {
	t.Helper()
	out := map[string]map[string][]byte{"meta store": {}, "local mirror": {}, "redis": {}}
	if err := x.m.Sources(func(_, name string, r []byte) error {
		out["meta store"][name] = append([]byte(nil), r...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := x.m.Mirrored(meta.MirrorSource, func(_, name string, _ uint64, r []byte) error {
		out["local mirror"][name] = append([]byte(nil), r...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, name := range rewrapNames {
		r, err := x.rdb.HGet(context.Background(), x.ns+"ss:"+sourceMember(name), "r").Bytes()
		if err != nil {
			t.Fatal(err)
		}
		out["redis"][name] = r
	}
	return out
}

// Rewrap seals every secret under the current key, in the meta store,
// the mirror and Redis; leaves what is sealed under it already as it is;
// and a second run rewraps nothing.
func TestRewrap(t *testing.T) {
	x := newRewrapFixture(t)
	o := x.options(t)
	parts, err := Rewrap(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	wantParts := []string{"meta store", "local mirror", fmt.Sprintf("redis namespace %q", x.ns)}
	if len(parts) != len(wantParts) {
		t.Fatalf("parts %+v, want %v", parts, wantParts)
	}
	for i, p := range parts {
		want := RewrapPart{Part: wantParts[i], Read: 3, Rewrapped: 2, Secrets: rewrapSecrets}
		if p != want {
			t.Errorf("part %d: %+v, want %+v", i, p, want)
		}
	}
	onlyCurrent := testKeyring(t, testKey(2), nil)
	for part, recs := range x.records(t) {
		for name, r := range recs {
			_, spec, st, err := decodeSourceRecord("acme", name, r, 0, onlyCurrent)
			if err != nil {
				t.Errorf("%s %s: without the previous key: %v", part, name, err)
				continue
			}
			if st != (SecretsState{Current: 7}) {
				t.Errorf("%s %s: %+v, want 7 secrets under the current key", part, name, st)
			}
			if spec.Sinks[1].URL != "amqp://guest:mqpw-plain-444@127.0.0.1:5672/" || spec.Verify.Secrets[1].Value != "vsecB-plain-222" {
				t.Errorf("%s %s: opens to %+v", part, name, spec)
			}
			if bytes.Contains(r, []byte("plain")) {
				t.Errorf("%s %s: a secret in clear: %s", part, name, r)
			}
		}
		if !bytes.Equal(recs["cur"], x.current) {
			t.Errorf("%s: the record under the current key was rewritten", part)
		}
	}
	// Redis's versions moved for the two rewritten records only.
	k := newFleetKeys(x.ns)
	for name, want := range map[string]string{"prev": "4", "clear": "5", "cur": "3"} {
		if v, _ := x.rdb.HGet(context.Background(), k.prefix+sourceMember(name), "v").Result(); v != want {
			t.Errorf("redis %s at version %s, want %s", name, v, want)
		}
	}
	before := x.records(t)
	parts, err = Rewrap(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		if want := (RewrapPart{Part: wantParts[i], Read: 3}); p != want {
			t.Errorf("second run, part %d: %+v, want %+v", i, p, want)
		}
	}
	after := x.records(t)
	for part := range before {
		for name := range before[part] {
			if !bytes.Equal(before[part][name], after[part][name]) {
				t.Errorf("second run rewrote %s %s", part, name)
			}
		}
	}
}

// A record a node changes between the rewrap's read and its write is
// skipped: the node's write stands.
func TestRewrapSkipsConcurrentChange(t *testing.T) {
	x := newRewrapFixture(t)
	k := newFleetKeys(x.ns)
	ctx := context.Background()
	// Directly: a rewrite checked against a version the record left.
	c := change{member: sourceMember("prev"), tenant: "acme", name: "prev", version: 99}
	if ok, err := k.rewrite(ctx, x.rdb, "e1", "m1", c, []byte(`{}`)); err != nil || ok {
		t.Fatalf("a rewrite at a stale version: %v %v, want refused", ok, err)
	}
	// And within a run: at -rate 2 the first rewrite waits 500 ms after
	// the namespace was read; the records change meanwhile.
	b := x.m.NewBatch() // an empty meta store: the run starts with Redis
	for _, name := range rewrapNames {
		b.DeleteSource("acme", name)
		b.DeleteMirrored(meta.MirrorSource, "acme", name)
	}
	if err := b.Commit(meta.Sync); err != nil {
		t.Fatal(err)
	}
	b.Close()
	o := x.options(t)
	o.Rate = 2
	go func() {
		time.Sleep(150 * time.Millisecond)
		for _, name := range []string{"prev", "clear"} {
			x.rdb.HSet(ctx, k.prefix+sourceMember(name), "v", 50)
		}
	}()
	parts, err := Rewrap(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if p := parts[len(parts)-1]; p.Read != 3 || p.Rewrapped != 0 || p.Skipped != 2 {
		t.Fatalf("%+v, want 3 read, 2 skipped", p)
	}
	// Each still opens as it was (under the old key alone; in clear
	// without any key): neither was rewritten.
	for name, kr := range map[string]*secrets.Keyring{"prev": x.oldKR, "clear": nil} {
		r, _ := x.rdb.HGet(ctx, k.prefix+sourceMember(name), "r").Bytes()
		if _, _, st, err := decodeSourceRecord("acme", name, r, 0, kr); err != nil || st.NeedsRewrap() != (kr == nil) {
			t.Errorf("%s was rewritten after a node changed it: %+v %v", name, st, err)
		}
	}
}

// Rewrap refuses without a kek, and stops at a record no key opens,
// naming it.
func TestRewrapRefusals(t *testing.T) {
	x := newRewrapFixture(t)
	o := x.options(t)
	o.Keyring = testKeyring(t, nil, nil)
	if _, err := Rewrap(context.Background(), o); err == nil || !strings.Contains(err.Error(), "secrets.kek is not set") {
		t.Fatalf("without a kek: %v", err)
	}
	o.Keyring = testKeyring(t, testKey(2), nil) // the previous key is missing
	if _, err := Rewrap(context.Background(), o); err == nil || !strings.Contains(err.Error(), `stored source "prev" of tenant "acme": field `) {
		t.Fatalf("without the previous key: %v", err)
	}
}

// Rewrap tells its progress every 100 sources read, per part, and with
// no Redis rewraps the meta store and the mirror only.
func TestRewrapProgress(t *testing.T) {
	m := openMeta(t, t.TempDir())
	defer m.Close()
	oldKR, kr := testKeyring(t, testKey(1), nil), testKeyring(t, testKey(2), testKey(1))
	b := m.NewBatch()
	for i := 0; i < 250; i++ {
		name := fmt.Sprintf("s%03d", i)
		r := encodeSourceRecord(sealedSource(t, name), oldKR)
		if i%2 == 0 {
			r = encodeSourceRecord(sealedSource(t, name), kr)
		}
		b.PutSource("acme", name, r)
	}
	if err := b.Commit(meta.Sync); err != nil {
		t.Fatal(err)
	}
	b.Close()
	var calls []string
	parts, err := Rewrap(context.Background(), RewrapOptions{Config: testConfig(t), Keyring: kr, Meta: m,
		Progress: func(part string, read, rewrapped int) {
			calls = append(calls, fmt.Sprintf("%s %d %d", part, read, rewrapped))
		}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"meta store 100 50", "meta store 200 100"}; fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("progress %q, want %q", calls, want)
	}
	want := []RewrapPart{{Part: "meta store", Read: 250, Rewrapped: 125, Secrets: 875}, {Part: "local mirror"}}
	if fmt.Sprint(parts) != fmt.Sprint(want) {
		t.Errorf("parts %+v, want %+v", parts, want)
	}
}
