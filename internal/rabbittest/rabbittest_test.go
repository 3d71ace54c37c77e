package rabbittest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/ankusa/ankusa/internal/rabbittest"
)

// The helpers against the broker: what a Broker declares routes, Count
// and Drain see what was published, and Drain takes it all.
func TestBrokerTopology(t *testing.T) {
	b := rabbittest.New(t)
	x := b.Exchange("direct")
	q := b.Queue(nil, x, "k1", "k2")
	bodies := []string{"one", "two", "three"}
	err := b.Do(func(ch *amqp.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		for i, body := range bodies {
			key := []string{"k1", "k2"}[i%2]
			c, err := ch.PublishWithDeferredConfirmWithContext(context.Background(), x, key, true, false, amqp.Publishing{Body: []byte(body)})
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			ok, err := c.WaitContext(ctx)
			cancel()
			if err != nil || !ok {
				return errors.Join(errors.New("not confirmed"), err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := b.Count(q); n != len(bodies) {
		t.Fatalf("Count = %d, want %d", n, len(bodies))
	}
	var got []string
	for _, m := range b.Drain(q, len(bodies)) {
		got = append(got, string(m.Body))
	}
	if !slices.Equal(got, bodies) {
		t.Fatalf("drained %q, want %q", got, bodies)
	}
	if !strings.HasPrefix(x, "ankusa-test-testbrokertopology-") || !strings.HasPrefix(q, "ankusa-test-testbrokertopology-") {
		t.Fatalf("names %q %q are not under the test's prefix", x, q)
	}
	b.DeleteExchange(x)
	b.DeclareExchange(x, "direct")
	b.Bind(q, x, "k3")
}

// FindConn finds a connection by its connection_name, and Close has the
// broker close it with the reason given.
func TestFindConnClose(t *testing.T) {
	rabbittest.New(t)
	if own := rabbittest.FindConn(t, rabbittest.ConnectionName(t)); own.PID == "" || !strings.Contains(own.Name, "->") {
		t.Fatalf("the Broker's own connection: %+v", own)
	}

	cn := rabbittest.ConnectionName(t) + "/victim"
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(cn)
	conn, err := amqp.DialConfig(rabbittest.URL(), amqp.Config{Dial: amqp.DefaultDial(3 * time.Second), Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	c := rabbittest.FindConn(t, cn)
	c.Close(t, "rabbittest: closed on purpose")
	select {
	case e := <-closed:
		if e == nil || !strings.Contains(e.Reason, "rabbittest: closed on purpose") {
			t.Fatalf("the connection closed with %v, want the reason given", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the connection is still open 10s after close_connection")
	}
}

// Ctls tries ANKUSA_RABBITMQCTL first, then the one
// scripts/ensure-rabbitmq.sh writes under $TMPDIR, and lists what exists
// only once.
func TestCtls(t *testing.T) {
	tmp := t.TempDir()
	script := filepath.Join(tmp, "ankusa-rabbitmq", "rabbitmqctl")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(tmp, "my-rabbitmqctl")
	if err := os.WriteFile(own, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	t.Setenv("ANKUSA_RABBITMQCTL", own)
	got := rabbittest.Ctls()
	if len(got) < 2 || got[0] != own || got[1] != script {
		t.Fatalf("Ctls() = %q, want %q then %q first", got, own, script)
	}
	t.Setenv("ANKUSA_RABBITMQCTL", script)
	if got := rabbittest.Ctls(); got[0] != script || slices.Contains(got[1:], script) {
		t.Fatalf("Ctls() = %q, want %q once", got, script)
	}
	t.Setenv("ANKUSA_RABBITMQCTL", filepath.Join(tmp, "missing"))
	if got := rabbittest.Ctls(); got[0] != script {
		t.Fatalf("Ctls() = %q: lists a rabbitmqctl that does not exist", got)
	}
}
