package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// tmpfsSize is the node's disk: room for the WAL and the local segments
// of a 10-minute soak at 300 hooks/s (segments leave 20 s after they are
// archived), and small enough that filling it is quick.
const tmpfsSize = 256 << 20

// soak is one run's servers, sinks and load.
type soak struct {
	o        Options
	dir      string
	dataDir  string
	mounted  bool
	redis    *service
	rabbit   *service
	s3       *s3Server
	node     *node
	receiver *receiver
	consumer *consumer
	tl       *timeline
	amqpURL  string
	redisURL string
	setup    time.Duration
}

// setUp starts the private services, the sinks and the node; on an error
// it undoes what it did.
func setUp(ctx context.Context, o Options) (s *soak, err error) {
	began := time.Now()
	dir, err := os.MkdirTemp(o.Tmp, "ankusa-soak-")
	if err != nil {
		return nil, fmt.Errorf("cannot create the soak's directory (set -tmp): %w", err)
	}
	s = &soak{o: o, dir: dir, dataDir: filepath.Join(dir, "data"), tl: newTimeline(time.Now(), o.Interval)}
	defer func() {
		if err != nil {
			s.tearDown()
		}
	}()
	if err := s.startServices(ctx); err != nil {
		return nil, err
	}
	if s.receiver, err = startReceiver(); err != nil {
		return nil, err
	}
	s.consumer = startConsumer(s.amqpURL, s.tl)
	if err := s.startNode(ctx); err != nil {
		return nil, err
	}
	s.setup = time.Since(began)
	return s, nil
}

func (s *soak) startServices(ctx context.Context) error {
	var err error
	sub := func(name string) string {
		p := filepath.Join(s.dir, name)
		_ = os.MkdirAll(p, 0o700)
		return p
	}
	if s.redis, s.redisURL, err = newRedis(sub("redis")); err != nil {
		return err
	}
	if s.rabbit, s.amqpURL, err = newRabbit(sub("rabbitmq")); err != nil {
		return err
	}
	if s.s3, err = newS3(s.o.Bin, sub("s3")); err != nil {
		return err
	}
	for _, svc := range []*service{s.redis, s.s3.service, s.rabbit} {
		if err := svc.start(ctx); err != nil {
			return err
		}
	}
	if err := s.s3.makeBucket(ctx); err != nil {
		return err
	}
	return declare(s.amqpURL)
}

func (s *soak) startNode(ctx context.Context) error {
	if err := mountTmpfs(s.dataDir, tmpfsSize); err != nil {
		return err
	}
	s.mounted = true
	access, secret := filepath.Join(s.dir, "s3-access"), filepath.Join(s.dir, "s3-secret")
	if err := os.WriteFile(access, []byte(s.s3.access), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(secret, []byte(s.s3.secret), 0o600); err != nil {
		return err
	}
	var err error
	s.node, err = newNode(s.o, s.dir, s.dataDir, func(listen, admin string) string {
		var sources strings.Builder
		for i := range s.o.Sources {
			dedupe := ""
			if i%2 == 0 {
				dedupe = "\n    dedupe: {key: \"json:id\"}"
			}
			fmt.Fprintf(&sources, sourceConfig, fmt.Sprintf("s%d", i), dedupe, s.receiver.addr, s.amqpURL, soakExchange)
		}
		return fmt.Sprintf(nodeConfig, s.dataDir, listen, admin, s.redisURL, s.s3.endpoint, s.s3.bucket, access, secret, sources.String())
	}, s.tl)
	if err != nil {
		return err
	}
	return s.node.supervise(ctx)
}

// soak runs the load for the duration with faults in its middle, then
// checks and reports.
func (s *soak) soak(ctx context.Context) (*Report, error) {
	l, err := newLoad(s.o, s.node.listen, s.tl)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	s.tl.start = start
	loaded := make(chan struct{})
	go func() { l.run(ctx, start, s.o.Duration); close(loaded) }()

	margin := s.o.Duration / 10
	faultCtx, stopFaults := context.WithTimeout(ctx, s.o.Duration-margin)
	defer stopFaults()
	c := &chaos{kinds: s.o.Faults, pause: s.o.Pause, rnd: rand.New(rand.NewPCG(s.o.Seed, 2)), tl: s.tl, s: s}
	faulted := make(chan struct{})
	go func() {
		if sleep(faultCtx, margin) == nil {
			c.run(faultCtx)
		}
		close(faulted)
	}()
	<-faulted
	s.tl.event("faults over")
	<-loaded
	s.tl.event("load over")
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	acked, bad := l.results()
	chk, err := s.check(ctx, acked)
	if err != nil {
		return nil, err
	}
	if err := s.node.shutdown(); err != nil {
		s.tl.finding("%v", err)
	}
	s.node = nil
	return s.report(acked, bad, chk, time.Since(start)), nil
}

// tearDown stops everything the soak started and removes its directory.
func (s *soak) tearDown() {
	var errs []error
	if s.node != nil {
		if err := s.node.shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.consumer != nil {
		s.consumer.close()
	}
	if s.receiver != nil {
		s.receiver.close()
	}
	for _, svc := range []*service{s.redis, s.rabbit} {
		if svc != nil {
			svc.kill()
		}
	}
	if s.s3 != nil {
		s.s3.kill()
	}
	if s.mounted {
		if err := unmount(s.dataDir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "soak: tear-down:", err)
	}
}
