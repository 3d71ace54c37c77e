package redistest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestNamespaceCleanup: the keys under a namespace go when the test ends,
// and a key beside it stays.
func TestNamespaceCleanup(t *testing.T) {
	u := URL(t)
	c := Client(t, u)
	ctx := context.Background()
	var ns string
	t.Run("inner", func(t *testing.T) {
		ns = Namespace(t, u)
		if !strings.HasPrefix(ns, "ankusa-test:testnamespacecleanup-inner:") || strings.ContainsAny(ns, `*?[\`) {
			t.Fatalf("namespace %q", ns)
		}
		for i := range 2500 { // more than one SCAN page
			if err := c.Set(ctx, ns+"k"+string(rune('a'+i%26))+strings.Repeat("x", i/26), "v", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})
	beside := strings.TrimSuffix(ns, ":") + "-beside"
	t.Cleanup(func() { c.Del(ctx, beside) })
	if err := c.Set(ctx, beside, "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// The inner test's cleanup has run.
	keys, _, err := c.Scan(ctx, 0, ns+"*", 10000).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("%d keys left under %q, e.g. %q", len(keys), ns, keys[0])
	}
	if n, _ := c.Exists(ctx, beside).Result(); n != 1 {
		t.Fatalf("the key beside the namespace was deleted")
	}
}

func TestDeletePrefixRefusesGlobs(t *testing.T) {
	for _, p := range []string{"", "*", "a*", "a?", "a[b]", `a\`} {
		if _, err := DeletePrefix(DefaultURL, p); err == nil {
			t.Errorf("DeletePrefix(%q): no error", p)
		}
	}
}

func TestSanitize(t *testing.T) {
	if got := sanitize("TestX/sub case*[1]?"); got != "testx-sub-case--1--" {
		t.Fatalf("sanitize: %q", got)
	}
	if got := sanitize(strings.Repeat("a", 100)); len(got) != 64 {
		t.Fatalf("sanitize keeps %d bytes", len(got))
	}
}

// TestServerStopStart: a private server answers, stops answering, and
// answers again (empty) on the same port.
func TestServerStopStart(t *testing.T) {
	s := StartServer(t)
	c := Client(t, s.URL())
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Stop")
	}
	s.Stop() // twice is fine
	s.Start()
	var err error
	for range 50 { // the client's pool may hold a dead connection once
		if err = c.Ping(ctx).Err(); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("PING after Start: %v", err)
	}
	if n, _ := c.Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("a restarted server kept a key: it must keep nothing on disk")
	}
}

// TestServerAppendOnlyKeepsData: a server started with AppendOnly still
// holds what it was told after a Stop and a Start.
func TestServerAppendOnlyKeepsData(t *testing.T) {
	s := StartServerWith(t, ServerOptions{AppendOnly: true})
	c := Client(t, s.URL())
	ctx := context.Background()
	for i := range 100 {
		if err := c.Set(ctx, "k"+strings.Repeat("x", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	s.Stop()
	s.Start()
	var n int64
	var err error
	for range 50 { // the client's pool may hold a dead connection once
		if n, err = c.DBSize(ctx).Result(); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || n != 100 {
		t.Fatalf("after Stop and Start the server holds %d keys (%v), want the 100 it was given", n, err)
	}
	if v, err := c.Get(ctx, "k"+strings.Repeat("x", 99)).Int(); err != nil || v != 99 {
		t.Fatalf("GET after the restart: %d, %v; want 99", v, err)
	}
}
