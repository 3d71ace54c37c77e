package main

import (
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
)

// TestFetchAcked: the fetch check counts each kind of wrong answer, and reads
// both body encodings of the JSON form, so a zero from the crash run means
// something.
func TestFetchAcked(t *testing.T) {
	id := func(b byte) envelope.ID { return envelope.ID{0: 1, 15: b} }
	const token = "secret"
	binary := []byte{0xff, 0xfe, 0, 1}
	hooks := map[envelope.ID]envelope.Envelope{
		id(1): {ID: id(1), TenantID: "t1", Body: []byte(`{"a":"\u2028 é"}`)},
		id(2): {ID: id(2), TenantID: "t2", Body: binary},
		id(3): {ID: id(3), TenantID: "t1", Body: []byte("another body")},
		id(4): {ID: id(4), TenantID: "t9", Body: []byte("four")}, // answered for the wrong tenant
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		parts := strings.Split(r.URL.Path, "/") // "", v1, tenants, <tenant>, hooks, <id>
		got, err := envelope.ParseID([]byte(parts[5]))
		if err != nil || got == id(6) {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		e, ok := hooks[got]
		if !ok {
			http.Error(w, `{"error":"not_found"}`, http.StatusNotFound)
			return
		}
		w.Write(e.AppendJSON(nil))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	tenants := map[envelope.ID]string{id(1): "t1", id(2): "t2", id(3): "t1", id(4): "t4", id(5): "t1", id(6): "t1"}
	tenantOf := func(i envelope.ID) (string, bool) { s, ok := tenants[i]; return s, ok }
	ack := func(b byte, body []byte) acked { return acked{id: id(b), hash: sha256.Sum256(body)} }
	for _, tc := range []struct {
		name                                 string
		token                                string
		acks                                 []acked
		fetched, lost, mismatched, errs, b64 int
	}{
		{"utf8 and base64", token, []acked{ack(1, hooks[id(1)].Body), ack(2, binary)}, 2, 0, 0, 0, 1},
		{"other body", token, []acked{ack(3, []byte("the sent body"))}, 0, 0, 1, 0, 0},
		{"other tenant's hook", token, []acked{ack(4, []byte("four"))}, 0, 0, 1, 0, 0},
		{"404", token, []acked{ack(5, []byte("five"))}, 0, 1, 0, 0, 0},
		{"no tenant known", token, []acked{ack(7, []byte("seven"))}, 0, 1, 0, 0, 0},
		{"500", token, []acked{ack(6, []byte("six"))}, 0, 0, 0, 1, 0},
		{"bad token", "wrong", []acked{ack(1, hooks[id(1)].Body)}, 0, 0, 0, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := fetchAcked(addr, tc.token, tc.acks, tenantOf, 2)
			if v.fetched != tc.fetched || v.lost != tc.lost || v.mismatched != tc.mismatched || v.errors != tc.errs || v.base64 != tc.b64 {
				t.Fatalf("fetched %d (base64 %d) lost %d mismatched %d errors %d, want %d (%d) %d %d %d (%s)",
					v.fetched, v.base64, v.lost, v.mismatched, v.errors, tc.fetched, tc.b64, tc.lost, tc.mismatched, tc.errs, strings.Join(v.problems, "; "))
			}
		})
	}
}
