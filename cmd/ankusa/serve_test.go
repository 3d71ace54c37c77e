package main

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// rewriteConfig replaces old by new in the node's config file.
func (n *testNode) rewriteConfig(t *testing.T, old, new string) {
	t.Helper()
	data, err := os.ReadFile(n.config)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("the config has no %q", old)
	}
	if err := os.WriteFile(n.config, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A listener that cannot bind stops the boot with a message naming the
// config key to change, and leaves the data directory usable.
func TestServeListenBusy(t *testing.T) {
	for _, key := range []string{"listen", "admin.listen"} {
		t.Run(key, func(t *testing.T) {
			n := newNode(t)
			addr := n.listen
			if key == "admin.listen" {
				addr = n.admin
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			p := startProc(t, n.dir, "serve", "-config", n.config)
			code := p.wait(30 * time.Second)
			ln.Close()
			if code == 0 || !strings.Contains(p.stderr.String(), "(config key "+key+")") {
				t.Fatalf("serve with %s busy: exit %d, want non-zero naming config key %s:\n%s", addr, code, key, p.stderr)
			}
			p = n.serve(t)
			a := postOne(t, n.listen, "t0", "open", []byte("after the busy port"))
			p.stop()
			c := readWAL(t, n.walDir())
			checkNumbering(t, c.hooks)
			checkAcked(t, []ack{a}, c.hooks)
		})
	}
}

// A data directory remembers its node: another node.name on it is refused
// (event ids and archive keys carry the node), naming node.data_dir.
func TestServeRefusesAnotherNodesDataDir(t *testing.T) {
	n := newNode(t)
	p := n.serve(t)
	postOne(t, n.listen, "t0", "open", []byte("edge-test's hook"))
	p.stop()
	n.rewriteConfig(t, "name: edge-test", "name: edge-other")
	p = startProc(t, n.dir, "serve", "-config", n.config)
	code := p.wait(30 * time.Second)
	msg := p.stderr.String()
	if code == 0 || !strings.Contains(msg, "node.data_dir") || !strings.Contains(msg, `belongs to node \"edge-test\"`) {
		t.Fatalf("serve on edge-test's data dir as edge-other: exit %d, want non-zero naming node.data_dir and edge-test:\n%s", code, msg)
	}
}

// Ctrl-C (SIGINT), which the make run banner offers, drains like SIGTERM.
func TestSIGINTStops(t *testing.T) {
	n := newNode(t)
	p := n.serve(t)
	a := postOne(t, n.listen, "t0", "open", []byte("before Ctrl-C"))
	p.signal(os.Interrupt)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGINT, want 0:\n%s", code, p.stderr)
	}
	checkAcked(t, []ack{a}, readWAL(t, n.walDir()).hooks)
}
