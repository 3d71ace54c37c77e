package child

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				fmt.Fprintf(&b, "w%d\n", i)
				_ = b.String()
			}
		}(i)
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
}

func TestFreeAddr(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("FreeAddr gave %s, which cannot be listened on: %v", addr, err)
	}
	ln.Close()
}

// FreeAddr never gives one address twice in a process, however quickly
// the kernel hands a closed port out again.
func TestFreeAddrNeverTwice(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("FreeAddr gave %s twice", addr)
		}
		seen[addr] = true
	}
}

// Where the kernel's ephemeral range leaves room below it, FreeAddr's
// ports come from there, out of reach of the ports the kernel hands out
// to outgoing connections.
func TestFreeAddrBelowEphemeralRange(t *testing.T) {
	lo, hi := quietPorts()
	for range 50 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(addr)
		port, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("FreeAddr gave %q", addr)
		}
		if hi > lo && (port < lo || port >= hi) {
			t.Fatalf("FreeAddr gave port %d, outside [%d, %d) below the ephemeral range", port, lo, hi)
		}
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var first, last int
		if _, err := fmt.Sscan(string(b), &first, &last); err == nil && first >= 21000 && hi != first {
			t.Fatalf("ephemeral range starts at %d, but FreeAddr draws from [%d, %d)", first, lo, hi)
		}
	}
}
