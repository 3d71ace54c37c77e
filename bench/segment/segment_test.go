package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/tools/loadgen/payload"
)

// TestSealAndFetch: the hooks seal into segments the store adopts, all of
// them, in whatever order it lists them; every hook fetches back whole,
// signed by its provider's scheme, and the fetch measurement times what
// it was asked to.
func TestSealAndFetch(t *testing.T) {
	sizes, err := payload.ParseSizeMix("80%1KiB,20%8KiB")
	if err != nil {
		t.Fatal(err)
	}
	h, err := makeHooks(500, "mixed", sizes)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := seal(filepath.Join(dir, sealedDir), h.payloads, sealOptions{cutBytes: 256 << 10, dict: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.raw != h.raw || len(s.files) < 4 || s.comp == 0 || s.dicts != len(s.files)-1 {
		t.Fatalf("sealed %d raw bytes in %d files (%d compressed, %d with a dictionary), the hooks hold %d", s.raw, len(s.files), s.comp, s.dicts, h.raw)
	}
	if err := adopt(dir); err != nil {
		t.Fatal(err)
	}
	store, closeStore, err := openStore(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	signature := map[string]string{"stripe": "Stripe-Signature", "github": "X-Hub-Signature-256"}
	for i := range h.envs {
		want := &h.envs[i]
		e, err := store.Fetch(want.ID)
		if err != nil {
			t.Fatalf("hook %d: %v", want.Seq, err)
		}
		if e.Seq != want.Seq || e.TenantID != want.TenantID || !bytes.Equal(e.Body, want.Body) {
			t.Fatalf("hook %d: fetched seq %d of tenant %q, %d body bytes", want.Seq, e.Seq, e.TenantID, len(e.Body))
		}
		if !slices.ContainsFunc(e.Headers, func(hd envelope.Header) bool { return hd.Name == signature[e.SourceID] }) {
			t.Fatalf("hook %d (%s): no %s header in %v", want.Seq, e.SourceID, signature[e.SourceID], e.Headers)
		}
	}
	if err := closeStore(); err != nil {
		t.Fatal(err)
	}
	f, err := storeFetch(dir, sampleIDs(h, 50), 5) // nothing left to adopt
	if err != nil {
		t.Fatal(err)
	}
	if f.cold.N != 50 || f.disk.N != 5 || f.warm.N != 50 || f.warm.P50 <= 0 {
		t.Errorf("fetch latencies %+v: want 50 cold, 5 from disk, 50 warm", f)
	}
}
