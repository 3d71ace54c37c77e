package meta

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
)

func testRow() Delivery {
	return Delivery{State: RowDead, Attempts: 3, ReceivedAt: 1_764_445_200_000_000_001, StartedAt: 1_764_445_200_000_000_002,
		Due: 1_764_445_200_500_000_000, LastAt: 1_764_445_201_000_000_000, LastStatus: 503,
		EventID: envelope.MakeID(1_764_445_200_000, 7, 42), Source: "stripe", LastError: "status 503: receiver down"}
}

// The stored row format is frozen: these bytes are what a node wrote.
func TestDeliveryEncodingPinned(t *testing.T) {
	r := testRow()
	got := hex.EncodeToString(r.AppendTo(nil))
	// version 1, state dead, 3 attempts, received, started, due, last
	// attempt, status 503, event id, "stripe", the last error.
	const want = "01 03 0003 187c918f9ba4a001 187c918f9ba4a002 187c918fb9720500 187c918fd73f6a00 01f7 " +
		"019ad1211e800007000000000000002a 06 737472697065 19 737461747573203530333a20726563656976657220646f776e"
	if got != strings.ReplaceAll(want, " ", "") {
		t.Fatalf("encoding changed:\n got %s\nwant %s", got, want)
	}
	var back Delivery
	if err := DecodeDelivery(r.AppendTo(nil), &back); err != nil || back != r {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if RowState(r.AppendTo(nil)) != RowDead {
		t.Fatal("RowState disagrees with the encoding")
	}
}

// A stored row that does not decode is an error naming what is wrong,
// never a panic or a zero row taken for a real one.
func TestDeliveryDecodeRejectsDamage(t *testing.T) {
	r := testRow()
	good := r.AppendTo(nil)
	cases := map[string][]byte{
		"empty":         nil,
		"short":         good[:20],
		"version":       append([]byte{9}, good[1:]...),
		"state":         append([]byte{1, 7}, good[2:]...),
		"source cut":    good[:55],
		"error cut":     good[:len(good)-3],
		"length varint": append(append([]byte(nil), good[:54]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	}
	for name, b := range cases {
		var d Delivery
		if err := DecodeDelivery(b, &d); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: %v, want ErrBadRecord", name, err)
		}
	}
	if RowState([]byte{9, RowPending}) != 0 || RowState(nil) != 0 {
		t.Fatal("RowState of a value that is not a row must be 0")
	}
	long := r
	long.LastError = strings.Repeat("x", 2000)
	var back Delivery
	if err := DecodeDelivery(long.AppendTo(nil), &back); err != nil || len(back.LastError) != maxErrorBytes {
		t.Fatalf("a long error is cut to %d bytes: got %d, %v", maxErrorBytes, len(back.LastError), err)
	}
}

func TestAttemptRecordRoundTripAndDamage(t *testing.T) {
	a := AttemptRecord{At: 1_764_445_200_000_000_000, Latency: 1_500_000, Status: 429, Outcome: "retry", Error: "slow down"}
	var back AttemptRecord
	if err := DecodeAttempt(a.AppendTo(nil), &back); err != nil || back != a {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	b := a.AppendTo(nil)
	for _, bad := range [][]byte{nil, b[:17], b[:19], b[:len(b)-1]} {
		if err := DecodeAttempt(bad, &back); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%x: %v, want ErrBadRecord", bad, err)
		}
	}
}

// Keys sort by tenant, then seq (rows) or due time (the due index), and
// parse back; short keys are refused.
func TestDeliveryKeys(t *testing.T) {
	k1 := RowKey(nil, RowID{1, 300, "a"})
	k2 := RowKey(nil, RowID{1, 2000, "a"})
	k3 := RowKey(nil, RowID{2, 1, "a"})
	if !(bytes.Compare(k1, k2) < 0 && bytes.Compare(k2, k3) < 0) {
		t.Fatal("row keys do not sort by (tenant, seq)")
	}
	if !bytes.HasPrefix(k1, tenantPrefix(prefixRow, 1)) || !bytes.HasPrefix(k1, hookPrefix(prefixRow, 1, 300)) {
		t.Fatal("row key outside its tenant's and hook's prefix")
	}
	if id, ok := parseRowKey(k2); !ok || id.Ord != 1 || id.Seq != 2000 || id.Sink != "a" {
		t.Fatalf("parseRowKey: %+v %v", id, ok)
	}
	d1, d2 := DueKey(nil, RowID{1, 900, "b"}, 5), DueKey(nil, RowID{1, 1, "b"}, 6)
	if bytes.Compare(d1, d2) >= 0 {
		t.Fatal("due keys do not sort by due time within a tenant")
	}
	if id, due, ok := parseDueKey(d1); !ok || id.Ord != 1 || due != 5 || id.Seq != 900 || id.Sink != "b" {
		t.Fatalf("parseDueKey: %+v %d %v", id, due, ok)
	}
	ak := AttemptKey(nil, RowID{3, 7, "sink-1"}, 12)
	if id, n, ok := parseAttemptKey(ak); !ok || id.Ord != 3 || id.Seq != 7 || id.Sink != "sink-1" || n != 12 {
		t.Fatalf("parseAttemptKey: %+v %d %v", id, n, ok)
	}
	for _, short := range [][]byte{nil, []byte("r/"), k1[:14]} {
		if _, ok := parseRowKey(short); ok {
			t.Fatalf("parseRowKey accepted %x", short)
		}
		if _, _, ok := parseDueKey(short); ok {
			t.Fatalf("parseDueKey accepted %x", short)
		}
		if _, _, ok := parseAttemptKey(short); ok {
			t.Fatalf("parseAttemptKey accepted %x", short)
		}
	}
	if !bytes.Equal(prefixEnd([]byte{1, 0xff}), []byte{2}) || prefixEnd([]byte{0xff}) != nil {
		t.Fatal("prefixEnd")
	}
}

// pinnedRowHex is TestDeliveryEncodingPinned's row, without a release mark.
const pinnedRowHex = "01030003187c918f9ba4a001187c918f9ba4a002187c918fb9720500187c918fd73f6a0001f7" +
	"019ad1211e800007000000000000002a06737472697065" + "19737461747573203530333a20726563656976657220646f776e"

// The release mark is an optional trailing byte: a row without it is
// byte for byte what a node wrote before the pen, and a row with it is
// that and one byte more.
func TestDeliveryReleaseMark(t *testing.T) {
	r := testRow()
	if got := hex.EncodeToString(r.AppendTo(nil)); got != pinnedRowHex {
		t.Fatalf("a row without a release mark changed:\n got %s\nwant %s", got, pinnedRowHex)
	}
	for _, c := range []struct {
		mark byte
		tail string
	}{{ReleaseVerified, "01"}, {ReleaseForced, "02"}} {
		m := r
		m.Release = c.mark
		enc := m.AppendTo(nil)
		if got := hex.EncodeToString(enc); got != pinnedRowHex+c.tail {
			t.Fatalf("release %d:\n got %s\nwant %s", c.mark, got, pinnedRowHex+c.tail)
		}
		back := Delivery{Release: 9}
		if err := DecodeDelivery(enc, &back); err != nil || back != m {
			t.Fatalf("release %d round trip: %+v, %v", c.mark, back, err)
		}
		if RowState(enc) != RowDead {
			t.Fatalf("release %d: RowState %d", c.mark, RowState(enc))
		}
		// The mark follows a last error cut to its bound.
		long := m
		long.LastError = strings.Repeat("e", 3*maxErrorBytes)
		if err := DecodeDelivery(long.AppendTo(nil), &back); err != nil || back.Release != c.mark || len(back.LastError) != maxErrorBytes {
			t.Fatalf("release %d with a long error: %d error bytes, release %d, %v", c.mark, len(back.LastError), back.Release, err)
		}
	}
	// A row written before the pen decodes unreleased, whatever the row
	// it is decoded into held.
	old, _ := hex.DecodeString(pinnedRowHex)
	back := Delivery{Release: ReleaseForced}
	if err := DecodeDelivery(old, &back); err != nil || back.Release != 0 || back != r {
		t.Fatalf("old row: %+v, %v", back, err)
	}
	// A mark past ReleaseForced is damage.
	for _, bad := range []byte{ReleaseForced + 1, 0x80, 0xff} {
		var d Delivery
		if err := DecodeDelivery(append(append([]byte(nil), old...), bad), &d); !errors.Is(err, ErrBadRecord) {
			t.Errorf("release mark %d: %v, want ErrBadRecord", bad, err)
		}
	}
	// A pending row keeps its mark too.
	p := r
	p.State, p.Release, p.LastError, p.Attempts = RowPending, ReleaseForced, "", 0
	if err := DecodeDelivery(p.AppendTo(nil), &back); err != nil || back != p {
		t.Fatalf("pending released row: %+v, %v", back, err)
	}
}
