package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// Error codes of request bodies and query strings.
const (
	codeInvalidJSON    = "invalid_json"
	codeInvalidQuery   = "invalid_query"
	codeRequestTimeout = "request_timeout"
)

// Bounds of a listing page (pageParams).
const (
	defaultPageLimit = 100
	maxPageLimit     = 1000
)

// decodeJSON reads r's body, one JSON value, strictly into v (a pointer):
// at most admin.max_body_bytes (413 payload_too_large past it, whether
// sent with a length or chunked), no field v does not have, no trailing
// data, and not empty. It needs no Content-Type. On any failure it answers
// the error itself (400 invalid_json naming the field and what it wants,
// 413, or 408 when the client sent the body too slowly for
// admin.read_timeout) and returns false.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	return decodeJSONAs(w, r, v, codeInvalidJSON)
}

// decodeJSONAs is decodeJSON answering a body that does not decode with
// the code of the entity it describes (invalid_route), not invalid_json.
func decodeJSONAs(w http.ResponseWriter, r *http.Request, v any, badCode string) bool {
	var raw bytes.Buffer
	body := io.TeeReader(http.MaxBytesReader(w, r.Body, maxBodyOf(r)), &raw)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errTrailing
			if isBodyError(terr) {
				err = terr
			}
		}
	}
	if err == nil {
		err = exactFields(raw.Bytes(), v)
	}
	if err == nil {
		return true
	}
	status, code, msg := jsonProblem(err, maxBodyOf(r))
	if status != http.StatusBadRequest {
		w.Header().Set("Connection", "close")
	} else {
		code = badCode
	}
	writeError(w, status, code, msg)
	return false
}

var errTrailing = errors.New("trailing data")

// exactFields refuses a top-level key of the JSON object raw that only
// matches a field of v (a pointer to a struct) when case is ignored:
// encoding/json takes "RATE" for "rate", and a strict body takes the names
// as written.
func exactFields(raw []byte, v any) error {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var keys map[string]json.RawMessage
	if t.Kind() != reflect.Struct || json.Unmarshal(raw, &keys) != nil {
		return nil
	}
	for k := range keys {
		exact, folded := false, ""
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			exact = exact || name == k
			if strings.EqualFold(name, k) {
				folded = name
			}
		}
		if !exact {
			if folded != "" {
				return fmt.Errorf("%s: unknown field (names are case-sensitive: the field is %s)", k, folded)
			}
			return fmt.Errorf("%s: unknown field (a field this body does not have)", k)
		}
	}
	return nil
}

// isBodyError reports whether err is the body's failure (too large, too
// slow) rather than its content's.
func isBodyError(err error) bool {
	var tooLarge *http.MaxBytesError
	var ne net.Error
	return errors.As(err, &tooLarge) || errors.As(err, &ne) && ne.Timeout()
}

// jsonProblem is the answer to a body that did not decode.
func jsonProblem(err error, max int64) (status int, code, msg string) {
	var (
		tooLarge *http.MaxBytesError
		ne       net.Error
		syntax   *json.SyntaxError
		typ      *json.UnmarshalTypeError
	)
	bad := func(format string, args ...any) (int, string, string) {
		return http.StatusBadRequest, codeInvalidJSON, fmt.Sprintf(format, args...)
	}
	switch {
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge, codeTooLarge, tooLargeMessage(max)
	case errors.As(err, &ne) && ne.Timeout():
		return http.StatusRequestTimeout, codeRequestTimeout, "the request body did not arrive within admin.read_timeout"
	case errors.Is(err, io.EOF):
		return bad("the request needs a JSON body")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return bad("the JSON body ends before its value does")
	case errors.Is(err, errTrailing):
		return bad("the body holds more than one JSON value; send exactly one")
	case errors.As(err, &syntax):
		return bad("malformed JSON at byte %d: %s", syntax.Offset, strings.TrimPrefix(syntax.Error(), "json: "))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the body"
		}
		return bad("%s: a JSON %s is not %s", field, typ.Value, jsonTypeName(typ.Type.Kind().String()))
	}
	text := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(text, "unknown field "); ok {
		return bad("%s: unknown field (a field this body does not have)", strings.Trim(f, `"`))
	}
	return bad("%s", text)
}

// jsonTypeName says what a Go kind is as JSON.
func jsonTypeName(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "true or false"
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "a whole number (in range)"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "slice", kind == "array":
		return "an array"
	case kind == "struct", kind == "map":
		return "an object"
	}
	return "of the wanted type (" + kind + ")"
}

// pageParams reads a listing's cursor (opaque, "" for the first page) and
// limit (1 to 1000, 100 when absent) from r's query; the error names the
// parameter (answer it with writeQueryError). Other parameters are the
// handler's.
func pageParams(r *http.Request) (cursor string, limit int, err error) {
	q := r.URL.Query()
	for _, name := range []string{"cursor", "limit"} {
		if len(q[name]) > 1 {
			return "", 0, fmt.Errorf("%s: given %d times; give it once", name, len(q[name]))
		}
	}
	limit = defaultPageLimit
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > maxPageLimit {
			return "", 0, fmt.Errorf("limit: %q must be a whole number from 1 to %d", v[0], maxPageLimit)
		}
		limit = n
	}
	return q.Get("cursor"), limit, nil
}

// writeQueryError answers 400 invalid_query with err's message.
func writeQueryError(w http.ResponseWriter, err error) {
	writeError(w, http.StatusBadRequest, codeInvalidQuery, err.Error())
}
