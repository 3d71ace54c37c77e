package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestWALNoneCrashKafka is issue 19's acceptance 2 for Kafka: a kfake
// cluster in the test process (no Kafka broker can be installed here),
// three brokers on fixed ports, its log on disk with every produce synced
// (kfake.DataDir, kfake.SyncWrites), so stopping it and starting it again
// keeps what it acknowledged, as a Kafka cluster does.
func TestWALNoneCrashKafka(t *testing.T) {
	k := &walNoneKafka{dir: filepath.Join(t.TempDir(), "kafka"), topic: "hooks"}
	for range 3 {
		k.ports = append(k.ports, walNonePort(t))
	}
	k.start(t)
	t.Cleanup(func() {
		if k.c != nil {
			k.c.Close()
		}
	})
	walNoneCrash(t, "kafka", k)
}

// walNoneKafka is a kfake cluster that can stop and start on its ports
// and data directory.
type walNoneKafka struct {
	dir   string
	ports []int
	topic string
	c     *kfake.Cluster
}

func (k *walNoneKafka) brokers() []string {
	var out []string
	for _, p := range k.ports {
		out = append(out, fmt.Sprintf("127.0.0.1:%d", p))
	}
	return out
}

func (k *walNoneKafka) sink() string {
	return fmt.Sprintf("{id: kafka, type: kafka, brokers: %s, topic: %s, format: envelope, connect_timeout: 2s, timeout: 3s}", walNoneYAMLList(k.brokers()), k.topic)
}

func (k *walNoneKafka) start(t *testing.T) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(len(k.ports)), kfake.Ports(k.ports...), kfake.DataDir(k.dir),
		kfake.SyncWrites(), kfake.SeedTopics(8, k.topic))
	if err != nil {
		t.Fatalf("cannot start the kfake cluster: %v", err)
	}
	k.c = c
}

func (k *walNoneKafka) stop(t *testing.T) {
	k.c.Close()
	k.c = nil
}

// messages reads the topic from its start until it has been quiet for a
// second.
func (k *walNoneKafka) messages(t *testing.T) [][]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.brokers()...), kgo.ConsumeTopics(k.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out [][]byte
	quiet := 0
	for deadline := time.Now().Add(2 * time.Minute); quiet < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("still reading topic %s after 2 minutes (%d messages)", k.topic, len(out))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		for _, e := range fs.Errors() {
			if e.Err != context.DeadlineExceeded {
				t.Fatalf("reading topic %s: partition %d: %v", e.Topic, e.Partition, e.Err)
			}
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r.Value)
			n++
		})
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	return out
}

// walNonePort is a free TCP port on loopback.
func walNonePort(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// walNoneYAMLList is a YAML flow list of quoted strings.
func walNoneYAMLList(items []string) string {
	q := make([]string, len(items))
	for i, it := range items {
		q[i] = strconv.Quote(it)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
