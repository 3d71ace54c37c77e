package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Signer signs hooks the Standard Webhooks way (standardwebhooks.com), as
// the shared source's verifier checks them: HMAC-SHA256 over
// "<webhook-id>.<webhook-timestamp>.<body>", keyed by the base64-decoded
// part of a "whsec_..." secret, sent as "v1,<base64>" in
// webhook-signature. It is safe for concurrent use.
type Signer struct {
	key []byte
}

// NewSigner takes the secret as the source's verify.secret holds it:
// whsec_ then base64.
func NewSigner(secret string) (*Signer, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, errors.New("the signing secret must be whsec_ followed by base64, as the source's verify.secret")
	}
	return &Signer{key: key}, nil
}

// Signature is the webhook-signature value for one message.
func (s *Signer) Signature(msgID string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "%s.%d.", msgID, ts.Unix())
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// NewRequest builds the POST of body to url. A nil signer leaves the
// signature out (the node answers 401); otherwise it is signed with a
// fresh message id at ts, which must be within the verifier's tolerance
// (5 minutes by default) of the node's clock.
func NewRequest(ctx context.Context, url string, s *Signer, body []byte, ts time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if s != nil {
		id := newMsgID()
		req.Header.Set("Webhook-Id", id)
		req.Header.Set("Webhook-Timestamp", strconv.FormatInt(ts.Unix(), 10))
		req.Header.Set("Webhook-Signature", s.Signature(id, ts, body))
	}
	return req, nil
}

// newMsgID is a Standard Webhooks message id: unique per message (a
// retry of the same message keeps it).
func newMsgID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "msg_" + hex.EncodeToString(b[:])
}

// Delivery is the node's answer to a post: 201 with the event id once
// the hook is durable, else an error status and body.
type Delivery struct {
	Status  int
	EventID string // set on a 201
	Body    []byte
}

// Post signs body with s (nil: unsigned) and posts it to url now. The
// error is the transport's; any answer, 401 and 404 too, is a Delivery.
func Post(ctx context.Context, hc *http.Client, url string, s *Signer, body []byte) (*Delivery, error) {
	req, err := NewRequest(ctx, url, s, body, time.Now())
	if err != nil {
		return nil, err
	}
	return Send(hc, req)
}

// Send sends a request NewRequest built and reads the node's answer.
func Send(hc *http.Client, req *http.Request) (*Delivery, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("cannot read the answer to POST %s: %w", req.URL, err)
	}
	d := &Delivery{Status: resp.StatusCode, Body: b}
	if d.Status == http.StatusCreated {
		var v struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &v); err != nil || v.ID == "" {
			return nil, fmt.Errorf("POST %s: 201 without an event id: %q", req.URL, b)
		}
		d.EventID = v.ID
	}
	return d, nil
}
