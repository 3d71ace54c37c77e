// Package deploy holds what an operator deploys beside the node: the
// Grafana dashboard (grafana/ankusa.json) and the Prometheus alert rules
// (prometheus/alerts.yml). It has no code of its own: its test holds both,
// and docs/metrics.md, against the metrics the node's packages register,
// so a metric added, renamed or removed without them fails the tests.
package deploy
