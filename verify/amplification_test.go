package verify_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// An unsigned sender controls how many signatures a Stripe or Standard
// Webhooks header lists. If each entry cost a MAC over the body, a 16 KiB
// header of tiny entries ("v1=00," is 6 bytes) would buy thousands of
// passes over a 1 MiB body per request. These tests check that the cost of
// Verify does not grow with the number of entries: many entries must cost
// about what one does (the bound, 10x, is loose; the flaw costs ~1000x).

func TestStripeManySignaturesCostOneMAC(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "stripe", Secret: secret(stripeOld), Secrets: secrets(stripeNew)})
	one := "t=" + ts(now) + ",v1=00"
	many := "t=" + ts(now) + strings.Repeat(",v1=00", 1000)
	checkCostFlat(t, v,
		header("Stripe-Signature", one),
		header("Stripe-Signature", many))
}

func TestStandardWebhooksManySignaturesCostOneMAC(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "standardwebhooks", Secret: secret(swOld), Secrets: secrets(swNew)})
	tn := ts(now)
	checkCostFlat(t, v,
		header("Webhook-Id", swID, "Webhook-Timestamp", tn, "Webhook-Signature", "v1,AA=="),
		header("Webhook-Id", swID, "Webhook-Timestamp", tn, "Webhook-Signature", strings.TrimSpace(strings.Repeat("v1,AA== ", 1000))))
}

// checkCostFlat compares the best of several timings of two rejected
// requests that differ only in the number of signature entries.
func checkCostFlat(t *testing.T, v verify.Verifier, one, many verify.Headers) {
	t.Helper()
	body := bytes.Repeat([]byte("x"), 64<<10)
	best := func(h verify.Headers) time.Duration {
		min := time.Duration(1 << 62)
		for range 5 {
			start := time.Now()
			if err := v.Verify(h, body, now); err == nil {
				t.Fatal("BUG: an unsigned request was accepted")
			}
			if d := time.Since(start); d < min {
				min = d
			}
		}
		return min
	}
	d1, dn := best(one), best(many)
	bound := 10*d1 + time.Millisecond
	if raceEnabled {
		// The race detector slows the entries' parse, not the MAC: a
		// fresh-clone CI run measured 2.9 ms against one entry's 144 µs
		// under it, beside other packages. The flaw would cost ~1000×.
		bound = 50*d1 + 5*time.Millisecond
	}
	if dn > bound {
		t.Fatalf("1000 signature entries cost %v, one costs %v: each entry is a MAC over the body", dn, d1)
	}
}
