package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaTarget is a Kafka cluster in this process (franz-go's kfake: no
// Kafka broker can be installed here), three brokers holding the topic in
// memory, and a consumer that counts what arrives by the record's
// ankusa-event-id header.
type kafkaTarget struct {
	c     *kfake.Cluster
	cl    *kgo.Client
	topic string
	tally *tally
	done  chan struct{}
}

func openKafka() (*kafkaTarget, error) {
	k := &kafkaTarget{topic: "bench", tally: newTally(), done: make(chan struct{})}
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(16, k.topic))
	if err != nil {
		return nil, fmt.Errorf("cannot start the in-process Kafka cluster (kfake): %w", err)
	}
	k.c = c
	k.cl, err = kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(k.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		c.Close()
		return nil, err
	}
	go k.consume()
	return k, nil
}

func (k *kafkaTarget) consume() {
	defer close(k.done)
	for {
		fs := k.cl.PollFetches(context.Background())
		if fs.IsClientClosed() {
			return
		}
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "ankusa-event-id" {
					k.tally.record(h.Value, now)
					return
				}
			}
			k.tally.record(nil, now)
		})
	}
}

func (k *kafkaTarget) sink() string {
	return fmt.Sprintf(`{id: kafka, type: kafka, brokers: ["%s"], topic: %s}`, strings.Join(k.c.ListenAddrs(), `", "`), k.topic)
}

func (k *kafkaTarget) tallied() *tally { return k.tally }

func (k *kafkaTarget) close() error {
	k.cl.Close()
	<-k.done
	k.c.Close()
	return nil
}

// natsTarget is this run's own JetStream stream (file storage) on the
// NATS server at url, and an ordered consumer that counts what arrives by
// the message's Nats-Msg-Id (the event id). close deletes the stream.
type natsTarget struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	url     string
	stream  string
	subject string
	cc      jetstream.ConsumeContext
	tally   *tally
}

func openNATS(url string) (*natsTarget, error) {
	nc, err := nats.Connect(url, nats.Timeout(3*time.Second))
	if err != nil {
		return nil, fmt.Errorf("NATS at %s is not reachable (make services starts it; -no-nats skips these runs): %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	name := fmt.Sprintf("ankusa-bench-dispatch-%d-%08x", os.Getpid(), rand.Uint32())
	n := &natsTarget{nc: nc, js: js, url: url, stream: name, subject: name, tally: newTally()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}, Storage: jetstream.FileStorage}); err != nil {
		nc.Close()
		return nil, fmt.Errorf("cannot create stream %s: %w", name, err)
	}
	c, err := js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{})
	if err != nil {
		n.close()
		return nil, fmt.Errorf("cannot consume stream %s: %w", name, err)
	}
	n.cc, err = c.Consume(func(m jetstream.Msg) {
		n.tally.record([]byte(m.Headers().Get("Nats-Msg-Id")), time.Now())
	})
	if err != nil {
		n.close()
		return nil, fmt.Errorf("cannot consume stream %s: %w", name, err)
	}
	return n, nil
}

func (n *natsTarget) sink() string {
	return fmt.Sprintf(`{id: js, type: nats, url: %q, stream: %q, subject: "%s.{tenant_id}"}`, n.url, n.stream, n.subject)
}

func (n *natsTarget) tallied() *tally { return n.tally }

func (n *natsTarget) close() error {
	if n.cc != nil {
		n.cc.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := n.js.DeleteStream(ctx, n.stream)
	n.nc.Close()
	if err != nil {
		return fmt.Errorf("cannot delete stream %s: %w", n.stream, err)
	}
	return nil
}
