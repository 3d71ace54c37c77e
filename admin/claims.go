package admin

import (
	"context"
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/envelope"
)

// Errors a ClaimReader answers with (wrapped).
var (
	// ErrClaimNotFound: no such store, or the pack is gone: the one 404.
	ErrClaimNotFound = errors.New("admin: no such claim")
	// ErrClaimCorrupt: the bytes do not have the claim's SHA-256: 500
	// corrupt.
	ErrClaimCorrupt = errors.New("admin: the claimed bytes do not match the claim")
)

// ClaimReader reads bodies kept in claim packs (the node's claim stores;
// cli fills it, admin does not import the archive). It must be safe for
// concurrent use.
type ClaimReader interface {
	// InTenant reports whether the claim names one of tenant's packs
	// (its key is under the tenant's claims/tenant=<t>/ prefix).
	InTenant(ref envelope.Claim, tenant string) bool
	// Read reads and checks the body; ErrClaimNotFound and
	// ErrClaimCorrupt as above, any other error is the store's failure.
	Read(ctx context.Context, ref envelope.Claim) ([]byte, error)
}

// claimRefWildcard is the wildcard holding a claim reference: base64url
// (no padding) of the claim's JSON form (envelope.Claim.AppendRef).
const claimRefWildcard = "ref"

// maxClaimRef bounds a reference's text (a claim's JSON is about 250
// bytes).
const maxClaimRef = 2048

// claimRefText reports whether s is in the grammar of a reference:
// base64url characters, at most maxClaimRef. Whether it decodes is the
// handler's question (400 invalid_claim_ref).
func claimRefText(s string) bool {
	if s == "" || len(s) > maxClaimRef {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// claimHandler serves GET /v1/tenants/{tenant}/claims/{ref}: the body the
// claim names, as application/octet-stream, checked against its SHA-256.
type claimHandler struct {
	claims ClaimReader
	log    *zap.Logger
}

// notFoundClaim is the one 404: a claim of another tenant, of an unknown
// store, or whose pack is gone.
const notFoundClaim = "no claim with this reference"

func (h *claimHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tenant := r.PathValue("tenant")
	ref, err := envelope.ParseClaimRef(r.PathValue(claimRefWildcard))
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadClaimRef, "ref: "+err.Error()+" (a claim reference is base64url, no padding, of the claim's JSON)")
		return
	}
	if !h.claims.InTenant(ref, tenant) {
		writeError(w, http.StatusNotFound, codeNotFound, notFoundClaim)
		return
	}
	body, err := h.claims.Read(r.Context(), ref)
	switch {
	case errors.Is(err, ErrClaimNotFound):
		writeError(w, http.StatusNotFound, codeNotFound, notFoundClaim)
	case errors.Is(err, ErrClaimCorrupt):
		h.log.Error("a claimed body does not match its claim", zap.String("tenant", tenant), zap.String("key", ref.Key), zap.Error(err))
		writeError(w, http.StatusInternalServerError, codeCorrupt, "the claimed bytes of "+ref.Key+" do not match the claim's sha256; the node's log says more")
	case err != nil:
		h.log.Error("cannot read a claim", zap.String("tenant", tenant), zap.String("store", ref.Store), zap.String("key", ref.Key), zap.Error(err))
		writeError(w, http.StatusBadGateway, codeClaimStore, "claim store "+ref.Store+" did not answer; the node's log says why")
	default:
		writeBody(w, http.StatusOK, "application/octet-stream", body)
	}
}
