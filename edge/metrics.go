package edge

import (
	"strconv"
	"sync/atomic"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/verify"
)

// statusCodes are the answers the edge gives; anything else counts as
// "other". The label set is bounded.
var statusCodes = []int{200, 201, 202, 400, 401, 403, 404, 405, 408, 413, 429, 431, 503}

var (
	statusCounters [600]*metrics.Counter
	otherStatus    = metrics.NewCounter(`ankusa_edge_requests_total{code="other"}`)
	bodyBytes      = metrics.NewCounter("ankusa_edge_body_bytes_total")
	commitFailures = metrics.NewCounter("ankusa_edge_commit_failures_total")
	verifyFailures = metrics.NewCounter("ankusa_edge_signature_failures_total")
	// quarantineLimited counts hooks refused because their source's
	// quarantine bucket was empty; penFull those refused by the pen's cap.
	quarantineLimited = metrics.NewCounter("ankusa_edge_quarantine_limited_total")
	penFull           = metrics.NewCounter("ankusa_edge_quarantine_full_total")
	panicsTotal       = metrics.NewCounter("ankusa_edge_panics_total")
	connRejections    = metrics.NewCounter("ankusa_edge_connections_refused_total")
	// tenantErasing counts hooks refused because their tenant is being
	// erased (503 tenant_erasing, router step 6 or the pen).
	tenantErasing = metrics.NewCounter("ankusa_edge_tenant_erasing_total")
)

func init() {
	for _, c := range statusCodes {
		statusCounters[c] = metrics.NewCounter(`ankusa_edge_requests_total{code="` + strconv.Itoa(c) + `"}`)
	}
}

func countStatus(code int) {
	if code >= 0 && code < len(statusCounters) && statusCounters[code] != nil {
		statusCounters[code].Inc()
		return
	}
	otherStatus.Inc()
}

// Why the listener refused a connection (connRefused).
const (
	refusedGlobal    = iota // limits.max_connections
	refusedPerClient        // limits.max_connections_per_client
)

// Why a connection was refused for its PROXY header (proxyRefused).
const (
	proxyUntrusted  = iota // a PROXY header from a peer not trusted
	proxyMalformed         // not a PROXY header, or a malformed one
	proxyIncomplete        // none within ProxyHeaderTimeout, or the peer hung up
)

var (
	proxyReasons  = []string{"untrusted", "malformed", "incomplete"}
	refusedLimits = []string{"limits.max_connections", "limits.max_connections_per_client"}
)

// openConns counts the public listeners' open connections, for the
// ankusa_edge_connections_open gauge.
var openConns atomic.Int64

var (
	_           = metrics.NewGauge("ankusa_edge_connections_open", func() float64 { return float64(openConns.Load()) })
	connRefused = []*metrics.Counter{
		metrics.NewCounter(`ankusa_edge_connections_refused_by_reason_total{reason="max_connections"}`),
		metrics.NewCounter(`ankusa_edge_connections_refused_by_reason_total{reason="max_connections_per_client"}`),
	}
	proxyRefused = func() []*metrics.Counter {
		cs := make([]*metrics.Counter, len(proxyReasons))
		for i, r := range proxyReasons {
			cs[i] = metrics.NewCounter(`ankusa_edge_proxy_refused_total{reason="` + r + `"}`)
		}
		return cs
	}()
)

// Outcomes of a subscription handshake (ankusa_edge_handshakes_total).
const (
	hsAnswered    = iota // answered as its provider expects
	hsRefused            // its signature or token did not verify: refused, never the challenge
	hsRateLimited        // the tenant's or the quarantine bucket was empty: 429
)

var hsOutcomes = []string{"answered", "refused", "rate_limited"}

// handshakeCounters are ankusa_edge_handshakes_total{kind,outcome}, one per
// handshake kind (verify.HandshakeKinds) and outcome: a bounded label set.
var handshakeCounters = func() map[string]*[3]*metrics.Counter {
	m := map[string]*[3]*metrics.Counter{}
	for _, k := range verify.HandshakeKinds {
		var cs [3]*metrics.Counter
		for i, o := range hsOutcomes {
			cs[i] = metrics.NewCounter(`ankusa_edge_handshakes_total{kind="` + k + `",outcome="` + o + `"}`)
		}
		m[k] = &cs
	}
	return m
}()

func countHandshake(kind string, outcome int) {
	if cs := handshakeCounters[kind]; cs != nil {
		cs[outcome].Inc()
	}
}
