package wal_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/wal"
)

func openCapped(t *testing.T, fs vfs.FS) *wal.WAL {
	t.Helper()
	w, err := wal.Open(wal.Options{FS: fs, Dir: "wal", Node: testNode, MaxTenants: 3, OnFatal: func(err error) { t.Errorf("fatal: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestMaxTenants: past MaxTenants a new tenant's hooks are refused in the
// loop (also when many new tenants race in one batch), known tenants go
// on, and the cap counts the ordinals the log holds across a reopen.
func TestMaxTenants(t *testing.T) {
	fs := vfs.NewMem()
	w := openCapped(t, fs)
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, refused := map[string]bool{}, 0
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprintf("t%d", i%8)
			_, err := commit(w, hook{tenant: name, tag: fmt.Sprint("x", i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created[name] = true
			case errors.Is(err, wal.ErrTenantLimit):
				refused++
			default:
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if len(created) != 3 || w.TenantCount() != 3 {
		t.Fatalf("%d tenants got hooks in, %d ordinals; want 3 of tenants.max 3", len(created), w.TenantCount())
	}
	if refused == 0 {
		t.Fatal("no hook was refused")
	}
	for name := range created {
		if _, err := commit(w, hook{tenant: name, tag: "y"}); err != nil {
			t.Fatalf("a known tenant past the cap: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = openCapped(t, fs)
	defer w.Close()
	if _, err := commit(w, hook{tenant: "brand-new", tag: "z"}); !errors.Is(err, wal.ErrTenantLimit) {
		t.Fatalf("a new tenant after a reopen with 3 ordinals: %v, want ErrTenantLimit", err)
	}
}
