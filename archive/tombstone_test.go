package archive

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// WriteTombstone writes the erase's object; writing it again is harmless,
// a later erase's object replaces an earlier one and never the other way
// round, and an unreadable object at the key is replaced by a good one.
func TestWriteTombstone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		ctx := context.Background()
		l := Layout{Prefix: "test"}
		t1 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
		read := func() Tombstone {
			t.Helper()
			ts, err := ReadTombstones(ctx, b, l)
			if err != nil {
				t.Fatal(err)
			}
			return Tombstone{Tenant: "acme", ErasedAt: ts["acme"]}
		}
		if err := WriteTombstone(ctx, b, l, Tombstone{Tenant: "acme", ErasedAt: t1, Node: "edge-1", SeqAtClose: 9, Ordinals: []uint32{3}}); err != nil {
			t.Fatal(err)
		}
		if err := WriteTombstone(ctx, b, l, Tombstone{Tenant: "acme", ErasedAt: t1, Node: "edge-1"}); err != nil {
			t.Fatalf("writing the same tombstone again: %v", err)
		}
		if got := read(); !got.ErasedAt.Equal(t1) {
			t.Fatalf("erased_at %v, want %v", got.ErasedAt, t1)
		}
		if err := WriteTombstone(ctx, b, l, Tombstone{Tenant: "acme", ErasedAt: t1.Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if got := read(); !got.ErasedAt.Equal(t1) {
			t.Fatalf("an earlier erase replaced a later one: erased_at %v", got.ErasedAt)
		}
		t2 := t1.Add(time.Hour)
		if err := WriteTombstone(ctx, b, l, Tombstone{Tenant: "acme", ErasedAt: t2}); err != nil {
			t.Fatal(err)
		}
		if got := read(); !got.ErasedAt.Equal(t2) {
			t.Fatalf("a later erase did not replace the earlier one: erased_at %v", got.ErasedAt)
		}
		// A damaged object at the key: replaced.
		if err := b.Delete(ctx, l.TombstoneKey("acme")); err != nil {
			t.Fatal(err)
		}
		bad := []byte("{not json")
		if err := b.Put(ctx, l.TombstoneKey("acme"), bytes.NewReader(bad), int64(len(bad)), hexSHA256(bad)); err != nil {
			t.Fatal(err)
		}
		if err := WriteTombstone(ctx, b, l, Tombstone{Tenant: "acme", ErasedAt: t1}); err != nil {
			t.Fatal(err)
		}
		if got := read(); !got.ErasedAt.Equal(t1) {
			t.Fatalf("the damaged tombstone was not replaced: erased_at %v", got.ErasedAt)
		}
	})
}
