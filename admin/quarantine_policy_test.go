package admin

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ankusa/ankusa/meta"
)

// TestReleaseVerifiesAgain: a release without force reads the hook and
// verifies it with its source's current secrets at the time it was
// received, and reaches the pen only when it passes, as ReleaseVerified;
// with force it reads nothing and goes as ReleaseForced. Each change
// reaches the pen with the audit row it is written with.
func TestReleaseVerifiesAgain(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	q, hooks := &fakePen{}, &fakeFetcher{}
	mux := http.NewServeMux()
	o := Options{Tokens: testTokens(), Hooks: hooks, Quarantine: q, Sources: penSources(), Logger: zap.New(core),
		Now: func() time.Time { return penNow }}
	if err := Register(mux, o); err != nil {
		t.Fatal(err)
	}
	at := penNow.UTC()
	// The row of each change, with the event admin gives it: the hook's
	// id, its source and whether it was forced; a drop of many, its count
	// and filter, about the tenant.
	row := func(action, entity, src, detail string) meta.AuditRow {
		ev := meta.Event{Type: "io.ankusa.quarantine.released", Subject: entity,
			Data: json.RawMessage(`{"event_id":"` + entity + `","forced":` + strconv.FormatBool(action == "quarantine.release_forced") + `,"source":"` + src + `"}`)}
		switch action {
		case "quarantine.drop":
			ev.Type, ev.Data = "io.ankusa.quarantine.dropped", json.RawMessage(`{"event_id":"`+entity+`","source":"`+src+`"}`)
		case "quarantine.drop_all":
			ev.Type, ev.Subject, ev.Data = "io.ankusa.quarantine.bulk_dropped", "acme", json.RawMessage(src)
		}
		return meta.AuditRow{At: at, Principal: "acme", Action: action, Tenant: "acme", Entity: entity, Detail: detail, Outcome: "ok", Event: ev}
	}
	sameRow := func(a, b meta.AuditRow) bool { return reflect.DeepEqual(a, b) }
	f := func(method, path string, status int, wantCalls, wantFetches []string, wantAudit ...meta.AuditRow) {
		t.Helper()
		q.reset()
		hooks.mu.Lock()
		hooks.calls = nil
		hooks.mu.Unlock()
		if w := do(mux, method, acmePen+path, "tok-acme"); w.Code != status {
			t.Fatalf("%s %s: %d %s, want %d", method, path, w.Code, w.Body, status)
		}
		calls, _ := q.recorded()
		_, audits := q.lookedUp()
		hooks.mu.Lock()
		fetches := slices.Clone(hooks.calls)
		hooks.mu.Unlock()
		if !slices.Equal(calls, wantCalls) || !slices.Equal(fetches, wantFetches) || !slices.EqualFunc(audits, wantAudit, sameRow) {
			t.Fatalf("%s %s: changes %q, fetches %q, audit rows %+v\nwant %q, %q, %+v", method, path, calls, fetches, audits, wantCalls, wantFetches, wantAudit)
		}
	}
	good := goodID.String()
	f("POST", "/"+good+"/release", 200, []string{"Release acme " + good + " force=false by acme"}, []string{good},
		row("quarantine.release", good, "stripe", "source stripe"))
	f("POST", "/"+good+"/release?force=true", 200, []string{"Release acme " + good + " force=true by acme"}, nil,
		row("quarantine.release_forced", good, "stripe", "source stripe"))
	// Still invalid, or nothing to verify it with: it stays, unchanged.
	f("POST", "/"+penStillID.String()+"/release", 409, nil, []string{penStillID.String()})
	f("POST", "/"+penExpired.String()+"/release", 409, nil, []string{penExpired.String()})
	f("POST", "/"+penSrcGone.String()+"/release", 409, nil, nil)
	// A hook that cannot be read cannot be verified: a 500 (not the hook
	// fetch's 404), and forced it goes all the same.
	f("POST", "/"+penRemovedID.String()+"/release", 500, nil, []string{penRemovedID.String()})
	entries := logs.FilterMessage("cannot release a quarantined hook").All()
	if len(entries) != 1 || entries[0].ContextMap()["error"] != "cannot read the hook to verify it again: segment: the hook's segment is no longer on local disk (segment 00000007)" {
		t.Fatalf("log %+v", logs.All())
	}
	f("POST", "/"+penRemovedID.String()+"/release?force=true", 200, []string{"Release acme " + penRemovedID.String() + " force=true by acme"}, nil,
		row("quarantine.release_forced", penRemovedID.String(), "stripe", "source stripe"))
	gh := fakePenHeld[1].ID.String()
	f("DELETE", "/"+gh, 204, []string{"Drop acme " + gh + " by acme"}, nil, row("quarantine.drop", gh, "gh", "source gh"))
	f("POST", "/drop?source=gh", 200, []string{"DropAll acme by acme"}, nil, row("quarantine.drop_all", "", `{"count":2,"source":"gh"}`, "2 hooks, source gh"))
	f("POST", "/drop?all=true", 200, []string{"DropAll acme by acme"}, nil, row("quarantine.drop_all", "", `{"count":4}`, "4 hooks"))
	f("POST", "/drop?source=none", 200, []string{"DropAll acme by acme"}, nil)
}
