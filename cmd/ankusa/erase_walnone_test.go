package main

// Issue 20: "Erasing on a wal.type: none node ... works the same way."
// A node with no WAL keeps no rows, pen or segments, but it has a
// tenant's ordinal, sources, routes, override and events: the erase takes
// them, the name sends again as a new tenant with a new ordinal, and a
// restart does not bring the old ordinal back.

import (
	"fmt"
	"net/http"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/ankusa/ankusa/internal/rabbittest"
)

func TestEraseWALNone(t *testing.T) {
	b := rabbittest.New(t)
	x := b.Exchange("topic")
	q := b.Queue(amqp.Table{}, x, "#")
	n := newErNode(t, erWithWAL("wal: {type: none}"), erWithName("erase-none"))
	p := n.serve(t)
	defer func() { p.stop() }()
	spec := func(name string) string {
		return fmt.Sprintf(`{"name": %q, "verify": {"type": "none"}, "sinks": [{"id": "mq", "type": "rabbitmq", "url": %q, "exchange": %q}]}`,
			name, rabbittest.URL(), x)
	}
	for _, tn := range []string{"acme", "globex"} {
		n.erAddSource(tn, tn+"-mq", spec(tn+"-mq"))
		for i := range 3 {
			hookID(t, "hook of "+tn, n.hook(tn, tn+"-mq", fmt.Sprintf(`{"n":%d}`, i)))
		}
	}
	wantStatus(t, "PUT rate_limit of acme", n.do("PUT", "/v1/tenants/acme/rate_limit", erAdminToken,
		`{"rate": 90000, "burst": 90000, "max_queue": 0, "max_queue_bytes": 0}`), http.StatusOK)
	if got := b.Count(q); got != 6 {
		t.Fatalf("%d messages in the queue, want the 6 hooks", got)
	}
	oldOrd, found := erTenantOrdinal(t, n, "acme")
	if !found {
		t.Fatal("acme has no ordinal before its erase")
	}
	st := erErase(t, n, "acme")
	if len(st.Ordinals) != 1 || st.Ordinals[0] != oldOrd || st.Removed["sources"] != 2 || st.Removed["rate_limit"] != 1 {
		t.Fatalf("erase status %+v: want ordinal %d, a source and its route, the override", st, oldOrd)
	}
	if _, found := erTenantOrdinal(t, n, "acme"); found {
		t.Fatal("acme still has an ordinal after its erase")
	}
	wantStatus(t, "the erased source", n.hook("acme", "acme-mq", `{"after":1}`), http.StatusNotFound)
	hookID(t, "globex after acme's erase", n.hook("globex", "globex-mq", `{"after":1}`))
	p.stop()
	erCheckErased(t, "wal none", erTrace(t, n.dataDir, "acme"), oldOrd)
	p = n.serve(t)
	// The name sends again: a new tenant, a new ordinal above every one
	// given; a restart keeps it (the old ordinal does not come back).
	n.erAddSource("acme", "acme-mq2", spec("acme-mq2"))
	hookID(t, "acme as a new tenant", n.hook("acme", "acme-mq2", `{"new":1}`))
	newOrd, found := erTenantOrdinal(t, n, "acme")
	globexOrd, _ := erTenantOrdinal(t, n, "globex")
	if !found || newOrd <= max(oldOrd, globexOrd) {
		t.Fatalf("acme sent again with ordinal %d (found %v): want one above %d and %d", newOrd, found, oldOrd, globexOrd)
	}
	p.stop()
	p = n.serve(t)
	if ord, _ := erTenantOrdinal(t, n, "acme"); ord != newOrd {
		t.Fatalf("after a restart acme has ordinal %d, want %d", ord, newOrd)
	}
	if got := erGetStatus(t, n, "acme"); got.State != "erased" || len(got.Ordinals) != 1 || got.Ordinals[0] != oldOrd {
		t.Fatalf("after a restart the erase status is %+v", got)
	}
}
