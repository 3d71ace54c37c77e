package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// listQuery is the query of GET .../deliveries.
type listQuery struct {
	filter dispatch.Filter
	cursor string
	limit  int
}

// parseListQuery reads state (required, only "dead"), the filter, cursor
// and limit, or answers a 400 naming the parameter.
func parseListQuery(w http.ResponseWriter, r *http.Request) (listQuery, bool) {
	return parsePageQuery(w, r, checkState, "state")
}

// parsePageQuery reads a listing's filter, cursor and limit, and the
// extra parameters check looks at, or answers a 400 naming the parameter.
func parsePageQuery(w http.ResponseWriter, r *http.Request, check func(map[string]string) string, extra ...string) (listQuery, bool) {
	q := listQuery{limit: defaultDeliveryLimit}
	vs, msg := queryParams(r, append([]string{"source", "since", "until", "cursor", "limit"}, extra...)...)
	if msg == "" && check != nil {
		msg = check(vs)
	}
	if msg == "" {
		q.filter, msg = parseFilter(vs)
	}
	if v, ok := vs["limit"]; ok && msg == "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDeliveryLimit {
			msg = fmt.Sprintf("limit: %q must be a whole number from 1 to %d", v, maxDeliveryLimit)
		}
		q.limit = n
	}
	q.cursor = vs["cursor"]
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, msg)
		return listQuery{}, false
	}
	return q, true
}

func checkState(vs map[string]string) string {
	switch s, ok := vs["state"]; {
	case !ok:
		return "state: required; state=dead lists the dead letters"
	case s != dispatch.Dead.String():
		return fmt.Sprintf("state: %q is not offered; only state=dead is listed (pending and in-flight deliveries are not)", s)
	}
	return ""
}

// parseBulkQuery reads the filter of a change to many rows (dead letters,
// quarantined hooks: what), and all=true; with needFilter an empty filter
// needs all=true. It answers a 400 naming the parameter when there is
// something wrong.
func parseBulkQuery(w http.ResponseWriter, r *http.Request, what, verb string, needFilter bool) (dispatch.Filter, bool) {
	vs, msg := queryParams(r, "source", "since", "until", "all")
	var f dispatch.Filter
	if msg == "" {
		f, msg = parseFilter(vs)
	}
	all, ok := vs["all"]
	if msg == "" && ok && all != "true" && all != "false" {
		msg = fmt.Sprintf("all: %q must be true or false", all)
	}
	if msg == "" && needFilter && all != "true" && f.Source == "" && f.Since.IsZero() && f.Until.IsZero() {
		msg = fmt.Sprintf("all: every %s of the tenant would be %s; give source, since or until, or all=true to mean it", what, verb)
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, msg)
		return dispatch.Filter{}, false
	}
	return f, true
}

// parseFilter reads source (a source name), since and until (RFC 3339
// times, since before until) into a filter, or says what is wrong.
func parseFilter(vs map[string]string) (dispatch.Filter, string) {
	var f dispatch.Filter
	if s, ok := vs["source"]; ok {
		if !config.ValidName([]byte(s)) {
			return f, fmt.Sprintf("source: %q is not a source name (it must match %s)", s, config.NameRE)
		}
		f.Source = s
	}
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		s, ok := vs[p.name]
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return f, fmt.Sprintf("%s: %q is not an RFC 3339 time such as 2025-11-29T19:40:00Z (write a + in an offset as %%2B)", p.name, s)
		}
		*p.t = t.UTC()
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, "since: must be before until (since is inclusive, until exclusive)"
	}
	return f, ""
}

// queryParams returns r's query parameters, each given at most once and
// named in allowed, or a message naming the first one that is not.
func queryParams(r *http.Request, allowed ...string) (map[string]string, string) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, fmt.Sprintf("query: cannot parse the query string: %v", err)
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	vs := make(map[string]string, len(q))
	for _, name := range names {
		switch {
		case !slices.Contains(allowed, name):
			return nil, fmt.Sprintf("%s: not a parameter here (the parameters are %v)", name, allowed)
		case len(q[name]) > 1:
			return nil, fmt.Sprintf("%s: given %d times; give it once", name, len(q[name]))
		}
		vs[name] = q[name][0]
	}
	return vs, ""
}
