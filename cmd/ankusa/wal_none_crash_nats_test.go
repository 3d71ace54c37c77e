package main

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ankusa/ankusa/internal/natstest"
)

// TestWALNoneCrashNATS is issue 19's acceptance 2 for NATS JetStream: a
// private nats-server (its store kept across a stop and a start) with a
// file-storage stream of the test's own.
func TestWALNoneCrashNATS(t *testing.T) {
	srv := natstest.StartServer(t, natstest.ServerOptions{})
	stream, prefix := natstest.Names(t, srv.URL())
	c := natstest.Connect(t, srv.URL(), nats.MaxReconnects(-1))
	c.CreateStream(jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"}, Storage: jetstream.FileStorage})
	walNoneCrash(t, "nats", &walNoneNATS{srv: srv, c: c, stream: stream, prefix: prefix})
}

type walNoneNATS struct {
	srv            *natstest.Server
	c              *natstest.Client
	stream, prefix string
}

func (n *walNoneNATS) sink() string {
	return fmt.Sprintf(`{id: js, type: nats, url: %q, stream: %q, subject: "%s.{tenant_id}", format: envelope, connect_timeout: 2s, timeout: 3s}`,
		n.srv.URL(), n.stream, n.prefix)
}

func (n *walNoneNATS) stop(t *testing.T)  { n.srv.Stop() }
func (n *walNoneNATS) start(t *testing.T) { n.srv.Start() }

func (n *walNoneNATS) messages(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	for _, m := range n.c.Msgs(n.stream, 0) {
		out = append(out, m.Data)
	}
	return out
}
