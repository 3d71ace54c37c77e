package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A private server keeps its stream and messages across Stop and Start.
func TestServerRestartKeepsStore(t *testing.T) {
	srv := StartServer(t, ServerOptions{})
	c := Connect(t, srv.URL())
	stream, subj := Names(t, srv.URL())
	c.CreateStream(jetstream.StreamConfig{Name: stream, Subjects: []string{subj + ".>"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.JS.Publish(ctx, subj+".a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	srv.Start()
	c2 := Connect(t, srv.URL())
	ms := c2.Msgs(stream, 1)
	if len(ms) != 1 || string(ms[0].Data) != "one" || ms[0].Subject != subj+".a" {
		t.Fatalf("after a restart the stream holds %d messages: %+v", len(ms), ms)
	}
}

func TestSharedServer(t *testing.T) {
	u := URL(t)
	c := Connect(t, u)
	stream, subj := Names(t, u)
	c.CreateStream(jetstream.StreamConfig{Name: stream, Subjects: []string{subj + ".>"}, Storage: jetstream.MemoryStorage})
	if ms := c.Msgs(stream, 0); len(ms) != 0 {
		t.Fatalf("a new stream holds %d messages", len(ms))
	}
}
