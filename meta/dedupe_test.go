package meta

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
)

const dayNs = int64(24 * time.Hour)

func TestDedupeDay(t *testing.T) {
	noon := time.Date(2025, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
	cases := []struct {
		expiry int64
		want   uint32
	}{
		{-1, 0},
		{-dayNs * 5, 0},
		{0, 0},
		{dayNs - 1, 0},
		{dayNs, 1},
		{noon, 20421},
		{time.Date(2025, 11, 29, 0, 0, 0, 0, time.UTC).UnixNano(), 20421},
		{time.Date(2025, 11, 29, 23, 59, 59, 999_999_999, time.UTC).UnixNano(), 20421},
		{time.Date(2025, 11, 30, 0, 0, 0, 0, time.UTC).UnixNano(), 20422},
		{1<<63 - 1, uint32((1<<63 - 1) / dayNs)},
	}
	for _, c := range cases {
		if got := DedupeDay(c.expiry); got != c.want {
			t.Errorf("DedupeDay(%d) = %d, want %d", c.expiry, got, c.want)
		}
	}
}

// The dedupe key layout is frozen: dd/ day ordinal source 0x00 hash.
func TestDedupeKeyPinned(t *testing.T) {
	hash := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	got := hex.EncodeToString(DedupeKey(nil, 20421, 7, "stripe", hash))
	const want = "64642f 00004fc5 00000007 737472697065 00 000102030405060708090a0b0c0d0e0f"
	if got != strings.ReplaceAll(want, " ", "") {
		t.Fatalf("DedupeKey changed:\n got %s\nwant %s", got, want)
	}
	if got := DedupeKey([]byte("x"), 1, 2, "s", hash); !bytes.Equal(got, append([]byte("x"), DedupeKey(nil, 1, 2, "s", hash)...)) {
		t.Fatalf("DedupeKey(dst) = %x", got)
	}
	if got := hex.EncodeToString(dedupeDayPrefix(20421)); got != "64642f00004fc5" {
		t.Fatalf("dedupeDayPrefix = %s", got)
	}
}

// A day's keys are one prefix, and keys sort by day first, whatever the
// tenant, source or hash.
func TestDedupeKeyOrder(t *testing.T) {
	lo := bytes.Repeat([]byte{0}, 16)
	hi := bytes.Repeat([]byte{0xff}, 16)
	keys := [][]byte{
		DedupeKey(nil, 5, 0, "a", lo),
		DedupeKey(nil, 5, 0, "a", hi),
		DedupeKey(nil, 5, 0, "a.b", lo),
		DedupeKey(nil, 5, 0, "ab", lo),
		DedupeKey(nil, 5, 1<<32-1, "zzz", hi),
		DedupeKey(nil, 6, 0, "0", lo),
		DedupeKey(nil, 256, 0, "0", lo),
	}
	for i := 1; i < len(keys); i++ {
		if bytes.Compare(keys[i-1], keys[i]) >= 0 {
			t.Fatalf("dedupe key %d (%x) does not sort before %d (%x)", i-1, keys[i-1], i, keys[i])
		}
	}
	for i, k := range keys {
		onDay5 := i < 5
		if bytes.HasPrefix(k, dedupeDayPrefix(5)) != onDay5 || !bytes.HasPrefix(k, []byte(prefixDedupe)) {
			t.Fatalf("key %d (%x): under day 5's prefix is %v", i, k, !onDay5)
		}
	}
	// A source is cut from its hash by 0x00: "a" and "a\x00..." cannot meet.
	if bytes.Equal(DedupeKey(nil, 1, 1, "a", []byte("b")), DedupeKey(nil, 1, 1, "ab", nil)) {
		t.Fatal("source and hash run together")
	}
}

// The sweep: DeleteRange [prefixDedupe, dedupeDayPrefix(d)) removes the
// keys of earlier days, and nothing of day d, later days or other prefixes.
func TestDedupeSweepRange(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	db := s.db
	hi := bytes.Repeat([]byte{0xff}, 16)
	lo := make([]byte, 16)
	var old, kept [][]byte
	for _, day := range []uint32{0, 1, 20420} {
		old = append(old, DedupeKey(nil, day, 1, "stripe", lo), DedupeKey(nil, day, 1<<32-1, "zzz", hi))
	}
	for _, day := range []uint32{20421, 20422, 1<<32 - 1} {
		kept = append(kept, DedupeKey(nil, day, 0, "a", lo), DedupeKey(nil, day, 1<<32-1, "zzz", hi))
	}
	// Neighbours of the dd/ prefix: the due index (d/), the audit log (au/)
	// and keys just outside dd/.
	kept = append(kept, DueKey(nil, RowID{1, 9, "s"}, 5), AuditKey(1, 1), []byte("dd"), []byte("dd."), prefixEnd([]byte(prefixDedupe)), []byte("dc/\xff"))
	b := db.NewBatch()
	for _, k := range append(append([][]byte(nil), old...), kept...) {
		if err := b.Set(k, []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte(prefixDedupe), dedupeDayPrefix(20421), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	for _, k := range old {
		if _, c, err := db.Get(k); err == nil {
			c.Close()
			t.Errorf("key %x of an earlier day survived the sweep", k)
		} else if !errors.Is(err, pebble.ErrNotFound) {
			t.Fatal(err)
		}
	}
	for _, k := range kept {
		v, c, err := db.Get(k)
		if err != nil {
			t.Errorf("key %x was swept: %v", k, err)
			continue
		}
		if string(v) != "v" {
			t.Errorf("key %x = %q", k, v)
		}
		c.Close()
	}
}

// The dedupe value format is frozen: event id, expiry, seq.
func TestDedupeValuePinned(t *testing.T) {
	v := DedupeValue{EventID: envelope.MakeID(1_764_445_200_000, 7, 42), Expiry: 1_764_445_200_000_000_001, Seq: 0x0102030405060708}
	enc := v.AppendTo(nil)
	const want = "019ad1211e800007000000000000002a 187c918f9ba4a001 0102030405060708"
	if got := hex.EncodeToString(enc); got != strings.ReplaceAll(want, " ", "") {
		t.Fatalf("encoding changed:\n got %s\nwant %s", got, want)
	}
	if got := v.AppendTo([]byte("p")); !bytes.Equal(got, append([]byte("p"), enc...)) {
		t.Fatalf("AppendTo(dst) = %x", got)
	}
	for _, in := range []DedupeValue{v, {}, {Expiry: -1, Seq: 1<<64 - 1}} {
		var back DedupeValue
		if err := DecodeDedupeValue(in.AppendTo(nil), &back); err != nil || back != in {
			t.Fatalf("round trip of %+v: %+v, %v", in, back, err)
		}
	}
	for _, bad := range [][]byte{nil, enc[:16], enc[:31], append(append([]byte(nil), enc...), 0)} {
		var back DedupeValue
		if err := DecodeDedupeValue(bad, &back); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%d bytes: %v, want ErrBadRecord", len(bad), err)
		}
	}
}

// LookupDedupe finds a key in the days it may be filed under, not once it
// has expired, and a value that does not decode is no match (dedupe never
// drops a hook), counted as damaged.
func TestLookupDedupe(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	now := 20000*dayNs + dayNs/2
	ttl := 72 * time.Hour
	hash := bytes.Repeat([]byte{7}, 16)
	id := envelope.MakeID(1, 2, 3)
	b := s.NewBatch()
	b.AddDedupe(1, "stripe", hash, &DedupeValue{EventID: id, Expiry: now + int64(ttl), Seq: 3})
	if err := b.Commit(Sync); err != nil {
		t.Fatal(err)
	}
	b.Close()
	look := func(ord uint32, source string, at int64) (bool, int) {
		t.Helper()
		v, ok, damaged, err := s.LookupDedupe(ord, source, hash, ttl, at)
		if err != nil {
			t.Fatal(err)
		}
		if ok && (v.EventID != id || v.Seq != 3) {
			t.Fatalf("value %+v", v)
		}
		return ok, damaged
	}
	if ok, _ := look(1, "stripe", now); !ok {
		t.Fatal("a key just added is not found")
	}
	if ok, _ := look(2, "stripe", now); ok {
		t.Fatal("another tenant's key matched")
	}
	if ok, _ := look(1, "github", now); ok {
		t.Fatal("another source's key matched")
	}
	if ok, _ := look(1, "stripe", now+int64(ttl)); ok {
		t.Fatal("a key matched at its expiry")
	}
	if ok, _ := look(1, "stripe", now+int64(ttl)-1); !ok {
		t.Fatal("a key did not match 1ns before its expiry")
	}
	// A damaged value is not a match (and not an error).
	if err := s.db.Set(DedupeKey(nil, DedupeDay(now+int64(ttl)), 1, "stripe", hash), []byte("junk"), nil); err != nil {
		t.Fatal(err)
	}
	if ok, damaged := look(1, "stripe", now); ok || damaged != 1 {
		t.Fatalf("a damaged value: match %v, damaged %d", ok, damaged)
	}
	// SweepDedupe takes the days before now's.
	if err := s.SweepDedupe(now + int64(ttl) + dayNs); err != nil {
		t.Fatal(err)
	}
	if keys, _ := s.Census(); keys["dedupe"] != 0 {
		t.Fatalf("%d dedupe keys after the sweep", keys["dedupe"])
	}
}
