package cli

import (
	"context"
	"fmt"

	"github.com/ankusa/ankusa/lifecycle"
)

// openLifecycle starts the node's lifecycle events: the publisher to
// lifecycle.sink (when set) and the outbox's sweep. The meta store numbers
// events with the node's ordinal from here on.
func (n *node) openLifecycle(ordinal uint16) error {
	n.meta.SetEventNode(ordinal)
	o := lifecycle.Options{Store: n.meta, Node: n.cfg.Node.Name, Retain: n.cfg.Lifecycle.Retain.D(), Log: n.log.Named("lifecycle")}
	if spec := n.cfg.Lifecycle.Sink; spec != nil {
		sink, err := newSink(n.cfg, n.log)(lifecycle.SourceID, *spec)
		if err != nil {
			return fmt.Errorf("lifecycle.sink: %w", err)
		}
		o.Sink, o.Spec = sink, *spec
	}
	l, err := lifecycle.New(o)
	if err != nil {
		if o.Sink != nil {
			_ = o.Sink.Close()
		}
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.lifecycle, n.lifecycleSink = l, o.Sink
	n.stopLifecycle = cancel
	go l.Run(ctx)
	return nil
}

// closeLifecycle stops the publisher (an event it was sending is sent
// again at the next start) and closes its sink.
func (n *node) closeLifecycle() {
	if n.lifecycle == nil {
		return
	}
	n.stopLifecycle()
	<-n.lifecycle.Done()
	if n.lifecycleSink != nil {
		_ = n.lifecycleSink.Close()
	}
	n.lifecycle = nil
}
