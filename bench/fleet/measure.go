package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ankusa/ankusa/internal/redistest"
)

// measure makes the large store's measurements, then the small one's.
func measure(ctx context.Context, o *options) (*report, error) {
	rep := newReport(o)
	if err := measureLarge(ctx, o, rep); err != nil {
		return nil, err
	}
	if err := measureSmall(ctx, o, rep); err != nil {
		return nil, err
	}
	rep.busy = o.alone.Busy
	rep.check()
	return rep, nil
}

// dropNamespace deletes every key of the namespace; what it cannot is a
// failure of rep.
func (rep *report) dropNamespace(o *options, namespace string) {
	n, err := redistest.DeletePrefix(o.redis, namespace)
	if err != nil {
		rep.failures = append(rep.failures, fmt.Sprintf("cannot delete the namespace %q (%d keys deleted): %v", namespace, n, err))
		return
	}
	fmt.Printf("deleted the namespace %q: %d keys\n", namespace, n)
}

// measureLarge seeds -sources into a fresh namespace, boots A three ways
// and B once, then times the propagation and the creates/s.
func measureLarge(ctx context.Context, o *options, rep *report) error {
	ns := newNamespace("large")
	defer rep.dropNamespace(o, ns)
	fmt.Printf("seeding %d sources over %d tenants into %q...\n", o.sources, o.tenants, ns)
	var err error
	if rep.seed, err = seed(o, ns, o.sources, o.tenants); err != nil {
		return err
	}
	fmt.Printf("seeded in %s: %.0f sources/s\n", rep.seed.Round(time.Millisecond), rep.seedRate())
	if err := o.alone.Wait(ctx); err != nil {
		return err
	}
	if rep.reads, err = reads(o, ns, o.sources); err != nil {
		return err
	}
	fmt.Printf("in-process source.OpenFleet: over an empty meta store %s, over its mirror %s\n", rep.reads.First.Round(time.Millisecond), rep.reads.Mirror.Round(time.Millisecond))
	a, b, err := bootBoth(ctx, o, rep, ns)
	defer a.remove()
	defer b.remove()
	if err != nil {
		return err
	}
	if err := o.alone.Wait(ctx); err != nil {
		return err
	}
	rep.propagation = append(rep.propagation, propagate(ctx, a, b, "p-large", o.writes, o.tenants, o.sources))
	rep.printPropagation()
	for _, c := range o.clients {
		if err := o.alone.Wait(ctx); err != nil {
			return err
		}
		run := creates(ctx, a, c, o.tenants, o.createD)
		rep.creates = append(rep.creates, run)
		fmt.Printf("%d clients: %d creates in %.1fs, %.0f/s, p50 %s p99 %s, %d refused\n", c, run.Created, run.Seconds, run.PerSecond, run.Latency.P50, run.Latency.P99, run.Refused)
	}
	return stopBoth(a, b)
}

// bootBoth boots A on the namespace: its first boot, a boot with its
// local mirror, one with source_store.url where nothing listens, then
// once more with Redis (not measured); then B's first boot. The nodes
// are returned to be removed even on an error.
func bootBoth(ctx context.Context, o *options, rep *report, ns string) (a, b *node, err error) {
	a, err = newNode(o, "a")
	if err != nil {
		return nil, nil, err
	}
	b, err = newNode(o, "b")
	if err != nil {
		return a, nil, err
	}
	dead, err := deadRedis()
	if err != nil {
		return a, b, err
	}
	steps := []struct{ what, url string }{
		{"first boot (no local mirror: reads the store from Redis)", o.redis},
		{"with its local mirror, Redis up", o.redis},
		{"with its local mirror, Redis unreachable", dead},
	}
	for i, s := range steps {
		if i > 0 {
			if err := a.stop(); err != nil {
				return a, b, err
			}
		}
		r, err := a.boot(ctx, o, s.what, s.url, ns, o.sources)
		if err != nil {
			return a, b, err
		}
		rep.boots = append(rep.boots, r)
	}
	if err := a.stop(); err != nil {
		return a, b, err
	}
	if _, err := a.boot(ctx, o, "with its local mirror, Redis back (not reported)", o.redis, ns, o.sources); err != nil {
		return a, b, err
	}
	r, err := b.boot(ctx, o, "first boot of a second node, A running", o.redis, ns, o.sources)
	if err != nil {
		return a, b, err
	}
	r.What = "B: " + r.What
	rep.boots = append(rep.boots, r)
	return a, b, nil
}

// stopBoth stops both nodes; a node that does not exit 0 is an error.
func stopBoth(a, b *node) error {
	errA, errB := a.stop(), b.stop()
	if errA != nil {
		return errA
	}
	return errB
}

// measureSmall times the propagation with -small sources stored, on two
// fresh nodes of a fresh namespace.
func measureSmall(ctx context.Context, o *options, rep *report) error {
	ns := newNamespace("small")
	defer rep.dropNamespace(o, ns)
	if _, err := seed(o, ns, o.small, max(1, min(o.tenants, o.small))); err != nil {
		return err
	}
	a, err := newNode(o, "a")
	if err != nil {
		return err
	}
	defer a.remove()
	b, err := newNode(o, "b")
	if err != nil {
		return err
	}
	defer b.remove()
	if _, err := a.boot(ctx, o, fmt.Sprintf("first boot with %d sources", o.small), o.redis, ns, o.small); err != nil {
		return err
	}
	if _, err := b.boot(ctx, o, fmt.Sprintf("first boot with %d sources", o.small), o.redis, ns, o.small); err != nil {
		return err
	}
	if err := o.alone.Wait(ctx); err != nil {
		return err
	}
	rep.propagation = append(rep.propagation, propagate(ctx, a, b, "p-small", o.writes, o.tenants, o.small))
	rep.printPropagation()
	return stopBoth(a, b)
}
