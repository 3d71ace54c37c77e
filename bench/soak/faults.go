package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The fault kinds, in the order the report lists them.
const (
	kindKill9     = "node-kill9"
	kindStop      = "node-sigstop"
	kindHTTP5xx   = "http-5xx"
	kindHTTPHang  = "http-hang"
	kindRabbitMQ  = "rabbitmq-kill"
	kindRedis     = "redis-kill"
	kindS3        = "s3-kill"
	kindDiskFull  = "disk-full"
	faultHold     = 6 * time.Second // how long a fault lasts (restarts add their boot)
	nodeReadyWait = time.Minute     // bound on a killed node's restart
)

var allKinds = []string{kindKill9, kindStop, kindHTTP5xx, kindHTTPHang, kindRabbitMQ, kindRedis, kindS3, kindDiskFull}

func allKindsList() string { return strings.Join(allKinds, ",") }

// parseKinds reads -faults: all, none, or a list of kinds; -disk-fault
// false drops disk-full from it.
func parseKinds(list string, disk bool) ([]string, error) {
	var kinds []string
	switch list {
	case "all":
		kinds = slices.Clone(allKinds)
	case "none", "":
	default:
		for k := range strings.SplitSeq(list, ",") {
			k = strings.TrimSpace(k)
			if !slices.Contains(allKinds, k) {
				return nil, fmt.Errorf("-faults: unknown kind %q (kinds: %s)", k, allKindsList())
			}
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	if !disk {
		kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == kindDiskFull })
	}
	return kinds, nil
}

// chaos injects the faults: one at a time, each kind once per round in a
// shuffled order, a pause between two.
type chaos struct {
	kinds []string
	pause time.Duration
	rnd   *rand.Rand
	tl    *timeline
	s     *soak
}

// run injects faults until ctx ends; a fault under way when it ends is
// undone at once.
func (c *chaos) run(ctx context.Context) {
	if len(c.kinds) == 0 {
		return
	}
	for ctx.Err() == nil {
		order := slices.Clone(c.kinds)
		c.rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, k := range order {
			if ctx.Err() != nil {
				return
			}
			began := time.Now()
			note := c.inject(ctx, k)
			c.tl.fault(k, began, note)
			if sleep(ctx, c.pause) != nil {
				return
			}
		}
	}
}

// inject runs one fault to its end and undoes it; the note says what
// happened when it is worth saying.
func (c *chaos) inject(ctx context.Context, kind string) string {
	s := c.s
	switch kind {
	case kindKill9:
		return c.kill9(ctx)
	case kindStop:
		s.node.signal(syscall.SIGSTOP)
		_ = sleep(ctx, faultHold)
		s.node.signal(syscall.SIGCONT)
	case kindHTTP5xx, kindHTTPHang:
		mode := answer5xx
		if kind == kindHTTPHang {
			mode = answerHang
		}
		s.receiver.setMode(mode)
		_ = sleep(ctx, faultHold)
		s.receiver.setMode(answerOK)
	case kindRabbitMQ:
		return c.bounce(ctx, s.rabbit, faultHold/2)
	case kindRedis:
		return c.bounce(ctx, s.redis, faultHold)
	case kindS3:
		return c.bounce(ctx, s.s3.service, faultHold)
	case kindDiskFull:
		return c.fillDisk(ctx)
	}
	return ""
}

// kill9 kills the node and waits until the supervisor has it ready again.
func (c *chaos) kill9(ctx context.Context) string {
	n := c.s.node
	before, _ := n.svc.current()
	n.kill9()
	deadline := time.Now().Add(nodeReadyWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if cmd, _ := n.svc.current(); cmd != nil && cmd != before && n.svc.ready() == nil {
			return ""
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Sprintf("not ready again within %v", nodeReadyWait)
}

// bounce kills a service -9, leaves it down for down, and starts it
// again; a service that does not come back is a finding.
func (c *chaos) bounce(ctx context.Context, svc *service, down time.Duration) string {
	svc.kill()
	_ = sleep(ctx, down)
	began := time.Now()
	// Started with a context of its own: the soak's end must not leave a
	// sink's server down.
	boot, cancel := context.WithTimeout(context.Background(), svc.boot)
	defer cancel()
	if err := svc.start(boot); err != nil {
		c.tl.finding("%s did not restart: %v", svc.name, firstLine(err.Error()))
		return "restart failed"
	}
	return fmt.Sprintf("down %v, boot %v", down, time.Since(began).Round(100*time.Millisecond))
}

// fillDisk fills the node's tmpfs with one file, holds it, and removes it.
func (c *chaos) fillDisk(ctx context.Context) string {
	path := filepath.Join(c.s.node.dataDir, "soak-disk-fill")
	filled, err := fill(path)
	if err != nil {
		c.tl.event("disk-full: %v", err)
	}
	_ = sleep(ctx, faultHold)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.tl.finding("cannot free the disk: %v", err)
	}
	return fmt.Sprintf("filled %d MiB", filled>>20)
}

// fill allocates every free byte of path's file system to path: a large
// fallocate, then 4 KiB writes until ENOSPC. It answers the bytes taken.
func fill(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	free := int64(st.Bavail) * int64(st.Bsize)
	var n int64
	for size := free; size >= 1<<20; size /= 2 {
		if unix.Fallocate(int(f.Fd()), 0, n, size) == nil {
			n += size
		}
	}
	block := make([]byte, 4096)
	for {
		if _, err := f.WriteAt(block, n); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return n, nil
			}
			return n, err
		}
		n += int64(len(block))
	}
}

// sleep waits d or until ctx ends (then it answers ctx's error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
