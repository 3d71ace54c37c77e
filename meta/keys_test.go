package meta

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
)

// pinnedKeys is one example key of every family, with its exact bytes:
// the layout of keys.go, frozen. A family without a row here fails
// TestKeysPinned.
var pinnedKeys = []struct {
	family string
	key    []byte
	hex    string // spaces between fields, for the reader
}{
	{"node", []byte(keyNode), "6d3a6e6f6465"},
	{"bootstrap-token", []byte(keyBootstrapToken), "6d3a61646d696e3a626f6f747374726170"},
	{"wal-checkpoint", []byte(keyWALCheckpoint), "6d3a77616c3a636865636b706f696e74"},
	{"wal-closed", []byte(keyWALClosed), "6d3a77616c3a636c6f736564"},
	{"dispatch-checkpoint", []byte(keyDispatchCheckpoint), "6d3a64697370617463683a636865636b706f696e74"},
	{"catalogue", segSeqKey(0x0102030405060708), "633a733a 0102030405060708"},
	{"catalogue-id", segIDKey(pinID[:]), "633a693a 019ad1211e800007000000000000002a"},
	{"catalogue-gap", segGapKey(0x0a0b0c0d0e0f1011), "633a673a 0a0b0c0d0e0f1011"},
	{"audit", AuditKey(0x0102030405060708, 0x0a0b0c0d), "61752f 0102030405060708 0a0b0c0d"},
	{"rows", RowKey(nil, pinRow), "722f 01020304 0a0b0c0d0e0f1011 73696e6b2d31"},
	{"due", DueKey(nil, pinRow, 0x187c918f9ba4a001), "642f 01020304 187c918f9ba4a001 0a0b0c0d0e0f1011 73696e6b2d31"},
	{"dead", DeadKey(nil, pinRow), "782f 01020304 0a0b0c0d0e0f1011 73696e6b2d31"},
	{"attempts", AttemptKey(nil, pinRow, 0x0203), "612f 01020304 0a0b0c0d0e0f1011 73696e6b2d31 00 0203"},
	{"pen", PenKey(nil, 0x01020304, 0x0a0b0c0d0e0f1011), "712f 01020304 0a0b0c0d0e0f1011"},
	{"tenant-counts", tenantCountKey(0x01020304), "6d3a74636f756e743a 01020304"},
	{"tenant", tenantKey("acme"), "743a 61636d65"},
	{"rate-limit", rateLimitKey("acme"), "6d3a726174656c696d69743a 61636d65"},
	{"source", entityKey(prefixSource, "acme", "s1"), "7372632f 61636d65 00 7331"},
	{"route", entityKey(prefixRoute, "acme", "r1"), "7274652f 61636d65 00 7231"},
	{"event-order", eventSeqKey(0x0102030405060708), "65712f 0102030405060708"},
	{"event-floor", []byte(keyEventLast), "6d3a6c6966656379636c653a6c617374"},
	{"event-published", []byte(keyEventPublished), "6d3a6c6966656379636c653a7075626c6973686564"},
	{"events", eventKey("acme", 0x0102030405060708), "65762f 61636d65 00 0102030405060708"},
	{"mirror-source", entityKey(prefixMirrorSource, "acme", "s1"), "78732f 61636d65 00 7331"},
	{"mirror-route", entityKey(prefixMirrorRoute, "acme", "r1"), "78722f 61636d65 00 7231"},
	{"mirror-state", []byte(keyMirrorState), "6d3a73733a6d6972726f72"},
	{"pending-change", append([]byte(prefixPendingChange), "c1"...), "6d3a73733a70656e64696e673a 6331"},
	{"erase", appendNameKey(nil, prefixErase, "acme"), "6d3a65726173653a 61636d65"},
	{"erased", appendNameKey(nil, prefixErased, "acme"), "6d3a6572617365643a 61636d65"},
	{"dedupe", DedupeKey(nil, 20421, 7, "stripe", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}),
		"64642f 00004fc5 00000007 737472697065 00 000102030405060708090a0b0c0d0e0f"},
}

var (
	pinID  = envelope.MakeID(1_764_445_200_000, 7, 42)
	pinRow = RowID{Ord: 0x01020304, Seq: 0x0a0b0c0d0e0f1011, Sink: "sink-1"}
)

func TestKeysPinned(t *testing.T) {
	pinned := map[string]bool{}
	for _, c := range pinnedKeys {
		if got, want := hex.EncodeToString(c.key), strings.ReplaceAll(c.hex, " ", ""); got != want {
			t.Errorf("%s key changed:\n got %s\nwant %s", c.family, got, want)
		}
		f := familyOf(c.key)
		if f == nil || f.Name != c.family {
			t.Errorf("%s key %x belongs to family %v", c.family, c.key, f)
		}
		pinned[c.family] = true
	}
	for _, f := range families {
		if !pinned[f.Name] {
			t.Errorf("family %s (%q) has no pinned key in pinnedKeys", f.Name, f.Prefix)
		}
	}
}

// The builders append: what dst held stays in front.
func TestKeysAppend(t *testing.T) {
	dst := []byte("xy")
	for name, k := range map[string][]byte{
		"RowKey":         RowKey(dst, pinRow),
		"DueKey":         DueKey(dst, pinRow, 5),
		"DeadKey":        DeadKey(dst, pinRow),
		"AttemptKey":     AttemptKey(dst, pinRow, 1),
		"PenKey":         PenKey(dst, 1, 2),
		"DedupeKey":      DedupeKey(dst, 1, 2, "s", []byte("h")),
		"appendEventKey": appendEventKey(dst, "acme", 1),
	} {
		if string(k[:2]) != "xy" {
			t.Errorf("%s(dst) = %x", name, k)
		}
	}
	// A due time before 1970 is filed at 0.
	if got := hex.EncodeToString(DueKey(nil, pinRow, -5)[6:14]); got != "0000000000000000" {
		t.Errorf("DueKey of a negative due: %s", got)
	}
}
