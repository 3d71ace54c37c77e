package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"strings"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/lifecycle"
)

// EventLog is the node's lifecycle outbox as a replay reads it:
// *lifecycle.Lifecycle is one, as it is. Replay calls fn with each event q
// selects, in outbox order, in its CloudEvents JSON form (fn may keep the
// slice), and returns the After of the call that goes on ("" when the
// outbox held no more); an After that is not an event id is
// lifecycle.ErrBadCursor. It must be safe for concurrent use.
type EventLog interface {
	Replay(q lifecycle.Query, fn func(event []byte) error) (next string, err error)
}

// mediaNDJSON is the media type of a replay's NDJSON form.
const mediaNDJSON = "application/x-ndjson"

// headerNextCursor carries a replay's next_cursor in both forms (the only
// place the NDJSON form has for it).
const headerNextCursor = "X-Next-Cursor"

// maxEventPageBytes bounds the events one answer holds (an event carries
// a source's whole spec, up to admin.max_body_bytes): a page ends after
// the event that reaches it, short of limit, with a next_cursor.
const maxEventPageBytes = 8 << 20

// eventTypeRE is what ?type= takes: an event type of ours, or a prefix of
// one ending in ".*".
var eventTypeRE = regexp.MustCompile(`^io\.ankusa\.([a-z][a-z_]*\.)*([a-z][a-z_]*|\*)$`)

// eventHandlers serves GET /v1/events.
type eventHandlers struct {
	events EventLog
	// pageBytes bounds an answer's events (maxEventPageBytes; a test
	// sets less).
	pageBytes int
	log       *zap.Logger
}

// registerEvents adds GET /v1/events, with the scopes of GET /v1/audit.
func registerEvents(mux router, auth *Auth, h *eventHandlers) {
	if h.pageBytes == 0 {
		h.pageBytes = maxEventPageBytes
	}
	mux.Handle("GET /v1/events", auth.Guard(needAuditScope, http.HandlerFunc(h.list)))
}

// eventList is the JSON form of a replay's page.
type eventList struct {
	Events     []json.RawMessage `json:"events"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

// list serves GET /v1/events?tenant=&type=&since=&after=&limit=&format=:
// the lifecycle outbox in commit order, as a JSON page or as NDJSON.
func (h *eventHandlers) list(w http.ResponseWriter, r *http.Request) {
	q, ndjson, msg := parseEventQuery(r)
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, msg)
		return
	}
	page, next, err := h.page(q)
	switch {
	case errors.Is(err, lifecycle.ErrBadCursor):
		writeError(w, http.StatusBadRequest, codeInvalidQuery, badAfter(q.After))
		return
	case err != nil:
		h.log.Error("cannot replay the lifecycle events", zap.String("tenant", q.Tenant), zap.Error(err))
		writeError(w, http.StatusInternalServerError, codeInternal, "the lifecycle events could not be read; the node's log says why")
		return
	}
	w.Header().Set("Vary", "Accept") // the form may follow Accept
	if next != "" {
		w.Header().Set(headerNextCursor, next)
	}
	if !ndjson {
		writeValue(w, http.StatusOK, eventList{Events: page, NextCursor: next})
		return
	}
	var b bytes.Buffer
	for _, ev := range page {
		b.Write(ev)
		b.WriteByte('\n')
	}
	writeBody(w, http.StatusOK, mediaNDJSON, b.Bytes())
}

// errPageFull stops a replay whose page reached its byte bound.
var errPageFull = errors.New("admin: the page is full")

// page reads one page of q: at most q.Limit events, ending after the one
// that reaches h.pageBytes, and the cursor of the page after it.
func (h *eventHandlers) page(q lifecycle.Query) (page []json.RawMessage, next string, err error) {
	size := 0
	next, err = h.events.Replay(q, func(ev []byte) error {
		page = append(page, ev)
		if size += len(ev); size >= h.pageBytes {
			return errPageFull
		}
		return nil
	})
	if errors.Is(err, errPageFull) {
		var last struct {
			ID string `json:"id"`
		}
		if err = json.Unmarshal(page[len(page)-1], &last); err != nil {
			return nil, "", fmt.Errorf("cannot read the id of a lifecycle event: %w", err)
		}
		next = last.ID
	}
	if page == nil {
		page = []json.RawMessage{}
	}
	return page, next, err
}

// parseEventQuery reads a replay's query; msg names the parameter that is
// wrong. ndjson is the form asked for: ?format=, else the Accept header.
func parseEventQuery(r *http.Request) (q lifecycle.Query, ndjson bool, msg string) {
	vs, msg := queryParams(r, "tenant", "type", "since", "after", "limit", "format")
	if msg != "" {
		return q, false, msg
	}
	if t, ok := vs["tenant"]; ok && !config.ValidName([]byte(t)) {
		return q, false, fmt.Sprintf("tenant: %q is not a tenant name (it must match %s)", t, config.NameRE)
	}
	if t, ok := vs["type"]; ok && !eventTypeRE.MatchString(t) {
		return q, false, fmt.Sprintf("type: %q is not an event type: io.ankusa.<entity>.<verb> (io.ankusa.source.created), or a prefix of one ending in .* (io.ankusa.source.*)", t)
	}
	f, msg := parseFilter(vs) // since; vs holds no source and no until
	if msg != "" {
		return q, false, msg
	}
	if a, ok := vs["after"]; ok {
		if _, err := lifecycle.ParseEventID(a); err != nil {
			return q, false, badAfter(a)
		}
	}
	_, limit, err := pageParams(r)
	if err != nil {
		return q, false, err.Error()
	}
	if ndjson, msg = eventForm(r, vs); msg != "" {
		return q, false, msg
	}
	return lifecycle.Query{Tenant: vs["tenant"], Type: vs["type"], Since: f.Since, After: vs["after"], Limit: limit}, ndjson, ""
}

// badAfter is the message of an after that is not a lifecycle event id.
func badAfter(a string) string {
	return fmt.Sprintf("after: %q is not a lifecycle event id (the id of an event a replay gave, or its next_cursor)", a)
}

// eventForm says whether a replay answers NDJSON: ?format=ndjson, or no
// format and an Accept header naming application/x-ndjson.
func eventForm(r *http.Request, vs map[string]string) (ndjson bool, msg string) {
	switch f, ok := vs["format"]; {
	case !ok:
	case f == "ndjson":
		return true, ""
	case f == "json":
		return false, ""
	default:
		return false, fmt.Sprintf("format: %q is neither json nor ndjson", f)
	}
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == mediaNDJSON {
				return true, ""
			}
		}
	}
	return false, ""
}
