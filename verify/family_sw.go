package verify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ankusa/ankusa/config"
)

// swFamily is Standard Webhooks: an id, a timestamp and a list of
// signatures ("v1,<base64>" HMAC-SHA256 under a whsec_ secret, "v1a,<base64>"
// Ed25519 under a whpk_ public key), space-separated, over
// "<id>.<timestamp>.<body>". The header names come from the preset
// (header, id, timestamp.from), so Svix's svix-* headers are a preset too.
type swFamily struct {
	name   string
	keys   []*macKey
	pubs   []ed25519.PublicKey
	header string
	id, ts source
	tspec  *tsSpec
}

func newSWFamily(p *Preset, _ config.Verify, secrets []string, tol time.Duration) (Verifier, error) {
	f := &swFamily{name: p.Name, header: canonical(orDefault(p.Header, "webhook-signature"))}
	var err error
	if f.id, err = parseSource("id", orDefault(p.ID, "header:webhook-id")); err != nil {
		return nil, err
	}
	ts := Timestamp{From: "header:webhook-timestamp"}
	if p.Timestamp != nil {
		ts = *p.Timestamp
	}
	if ts.Unit != "" && ts.Unit != "s" {
		return nil, fmt.Errorf("timestamp.unit: a Standard Webhooks timestamp is unix seconds")
	}
	if f.tspec, err = newTSSpec(&ts, tol); err != nil {
		return nil, err
	}
	if f.tspec.list {
		return nil, fmt.Errorf("timestamp.from: a Standard Webhooks timestamp is a header")
	}
	f.ts = f.tspec.src
	for i, s := range secrets {
		if pk, ok := strings.CutPrefix(s, "whpk_"); ok {
			raw, err := base64.StdEncoding.DecodeString(pk)
			if err != nil || len(raw) != ed25519.PublicKeySize {
				return nil, fmt.Errorf("verify.secret: a standardwebhooks public key is whpk_ followed by the base64 of 32 bytes (secret %d is not)", i+1)
			}
			f.pubs = append(f.pubs, ed25519.PublicKey(raw))
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil || len(raw) == 0 {
			return nil, fmt.Errorf("verify.secret: a standardwebhooks secret is whsec_ followed by base64, or whpk_ and a public key (secret %d does not decode)", i+1)
		}
		f.keys = append(f.keys, newMacKey(sha256.New, raw))
	}
	return f, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (f *swFamily) Name() string { return f.name }

var (
	swV1  = []byte("v1,")
	swV1a = []byte("v1a,")
)

// msgBufs hold the signed message of the asymmetric schemes, which sign
// it whole rather than as a stream.
var msgBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func (f *swFamily) Verify(h Headers, body []byte, now time.Time) error {
	st := getState()
	defer putState(st)
	id, ok1 := st.lookup(f.id, h, body)
	tsb, ok2 := st.lookup(f.ts, h, body)
	hdr := h.Peek(f.header)
	if !ok1 || !ok2 || len(hdr) == 0 {
		return ErrMissing
	}
	tm, ok := f.tspec.parse(tsb)
	if !ok {
		return ErrMalformed
	}
	if !f.tspec.within(tm, now) {
		return ErrExpired
	}
	match := 0
	for _, key := range f.keys {
		ms, mac := key.mac(id, dot, tsb, dot, body)
		match |= swMatch(hdr, swV1, mac, nil, nil)
		key.release(ms)
	}
	if len(f.pubs) > 0 {
		bp := msgBufs.Get().(*[]byte)
		msg := append(append(append(append(append((*bp)[:0], id...), '.'), tsb...), '.'), body...)
		for _, pk := range f.pubs {
			match |= swMatch(hdr, swV1a, nil, pk, msg)
		}
		*bp = msg[:0]
		msgBufs.Put(bp)
	}
	if match == 1 {
		return nil
	}
	return ErrMismatch
}

var dot = []byte(".")

// swMatch compares every "<version>,<base64>" item of a signature header
// with mac (v1) or checks it with pk over msg (v1a); 1: one matched. The
// sender chooses the number of items: each v1 item costs a decode and a
// compare, never a MAC. Ed25519 items are capped at maxSigs (each costs a
// signature check).
func swMatch(hdr, version, mac []byte, pk ed25519.PublicKey, msg []byte) int {
	var sigBuf [64]byte
	match, checked := 0, 0
	for rest := hdr; len(rest) > 0; {
		var it []byte
		if i := bytes.IndexByte(rest, ' '); i >= 0 {
			it, rest = rest[:i], rest[i+1:]
		} else {
			it, rest = rest, nil
		}
		val, ok := bytes.CutPrefix(it, version)
		if !ok {
			continue
		}
		sig, ok := decodeSig(&sigBuf, "base64", val)
		if !ok {
			continue
		}
		if pk == nil {
			match |= subtle.ConstantTimeCompare(mac, sig)
			continue
		}
		if len(sig) != ed25519.SignatureSize || checked == maxSigs {
			continue
		}
		checked++
		if ed25519.Verify(pk, msg, sig) {
			match = 1
		}
	}
	return match
}
