package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
)

// fakeClaims holds one claim per tenant of the fixtures; store "down"
// fails, a key holding "corrupt" does not match its claim.
type fakeClaims struct{}

// claimBody is the body of tenant t's claim.
func claimBody(t string) []byte { return []byte("the large body of " + t) }

// claimOf is tenant t's claim in store (packs unless given).
func claimOf(t, store, pack string) envelope.Claim {
	sum := sha256.Sum256(claimBody(t))
	return envelope.Claim{Store: store, Key: "claims/tenant=" + t + "/source=s/2026/12/05/" + pack, Offset: 0,
		Length: int64(len(claimBody(t))), SHA256: hex.EncodeToString(sum[:])}
}

func claimRef(t, store, pack string) string {
	c := claimOf(t, store, pack)
	return string(c.AppendRef(nil))
}

func (fakeClaims) InTenant(ref envelope.Claim, t string) bool {
	return strings.HasPrefix(ref.Key, "claims/tenant="+t+"/")
}

func (fakeClaims) Read(_ context.Context, ref envelope.Claim) ([]byte, error) {
	t := strings.TrimPrefix(strings.SplitN(ref.Key, "/", 3)[1], "tenant=")
	switch {
	case ref.Store == "down":
		return nil, errors.New("dial tcp 10.0.0.1:9000: connection refused")
	case strings.Contains(ref.Key, "corrupt"):
		return nil, fmt.Errorf("%w: sha256 differs", ErrClaimCorrupt)
	case t == "initech" || strings.Contains(ref.Key, "gone"):
		return nil, fmt.Errorf("%w: no object", ErrClaimNotFound)
	}
	return claimBody(t), nil
}

// TestClaimRoute: the body of the tenant's own claim (200, octet-stream),
// the one 404 for another tenant's claim, a gone pack, or an unknown one;
// 400 for a reference that does not decode or is outside the grammar; 500
// corrupt; 502 for a store that fails; the tenant's scope.
func TestClaimRoute(t *testing.T) {
	n := newFullNode(t)
	const T = "/v1/tenants/acme/claims/"
	for _, c := range []struct {
		target, bearer string
		status         int
		code, body     string
	}{
		{T + claimRef("acme", "packs", "p.pack"), "tok-a", 200, "", string(claimBody("acme"))},
		{T + claimRef("acme", "packs", "p.pack"), "tok-all", 200, "", string(claimBody("acme"))},
		{T + claimRef("globex", "packs", "p.pack"), "tok-a", 404, "not_found", ""},
		{T + claimRef("acme", "packs", "gone.pack"), "tok-a", 404, "not_found", ""},
		{T + "bm90IGpzb24", "tok-a", 400, "invalid_claim_ref", ""}, // "not json"
		{T + "e30", "tok-a", 400, "invalid_claim_ref", ""},         // {}: no store
		{T + "a.b", "tok-a", 400, "invalid_name", ""},
		{T + claimRef("acme", "packs", "corrupt.pack"), "tok-a", 500, "corrupt", ""},
		{T + claimRef("acme", "down", "p.pack"), "tok-a", 502, "claim_store_unavailable", ""},
		{T + claimRef("acme", "packs", "p.pack"), "tok-b", 403, "forbidden", ""},
		{T + claimRef("acme", "packs", "p.pack"), "", 401, "unauthorized", ""},
	} {
		a := n.do(t, "GET", c.target, c.bearer, "")
		if a.code != c.status || c.code != "" && errCode(a.body) != c.code || c.body != "" && a.body != c.body {
			t.Errorf("GET %s as %q: %d %s, want %d %s %q", c.target, c.bearer, a.code, a.body, c.status, c.code, c.body)
		}
		if a.code == http.StatusOK && a.header.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("GET %s: Content-Type %q", c.target, a.header.Get("Content-Type"))
		}
		if c.status == 502 && strings.Contains(a.body, "10.0.0.1") {
			t.Errorf("a store failure tells the client the store's address: %s", a.body)
		}
	}
}
