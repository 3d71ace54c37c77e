// Package deploy holds what an operator deploys beside the node: the
// systemd unit and its sample config (systemd/), the container file
// (container/), the Grafana dashboard (grafana/ankusa.json) and the
// Prometheus alert rules (prometheus/alerts.yml); README.md installs them.
//
// It has no code of its own, and imports no package of the module. Its
// tests hold the dashboard, the alerts and docs/metrics.md against the
// metrics the node's packages register (read with go list and go/parser),
// so a metric added, renamed or removed without them fails; and they run
// scripts/package.sh (make package) into a temporary directory, check
// the tarball, verify the unit with systemd-analyze against the binary it
// built, and check the container file and both sample configs with it.
package deploy
