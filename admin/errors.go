package admin

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// Error codes of the JSON error bodies.
const (
	codeUnauthorized = "unauthorized"
	codeForbidden    = "forbidden"
	codeNotFound     = "not_found"
	codeGone         = "gone"
	codeInternal     = "internal"
	codeCorrupt      = "corrupt"
	codeInvalidName  = "invalid_name"
	codeNotAllowed   = "method_not_allowed"
	codeTooLarge     = "payload_too_large"
	codeOverloaded   = "overloaded"
	codeBadClaimRef  = "invalid_claim_ref"
	codeClaimStore   = "claim_store_unavailable"
)

type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// writeError answers status with {"error":code,"message":msg} and a newline.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(errorBody{Error: code, Message: msg}); err != nil {
		panic("BUG: cannot encode an error body: " + err.Error())
	}
	writeJSON(w, status, b.Bytes())
}

// writeJSON answers status with body, a JSON document.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	writeBody(w, status, "application/json", body)
}

// writeBody answers status with body, of media type ctype. Admin answers
// hold tenants' data and are never cached.
func writeBody(w http.ResponseWriter, status int, ctype string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
