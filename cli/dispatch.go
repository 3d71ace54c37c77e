package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/admin"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/dispatch/sink/amqpsink"
	"github.com/ankusa/ankusa/dispatch/sink/httpsink"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

// newSink builds the sink of a source's sink spec.
func newSink(cfg *config.Config, log *zap.Logger) func(string, config.Sink) (dispatch.Sink, error) {
	return func(src string, spec config.Sink) (dispatch.Sink, error) {
		l := log.With(zap.String("source", src), zap.String("sink", spec.ID))
		switch spec.Type {
		case "http":
			return httpsink.New(httpsink.Options{Spec: spec, Source: src, Logger: l})
		case "rabbitmq":
			return amqpsink.New(amqpsink.Options{Spec: spec, Source: src, Node: cfg.Node.Name, Logger: l})
		}
		return nil, fmt.Errorf("unknown sink type %q", spec.Type)
	}
}

// deliveries serves the admin API's delivery routes from dispatch.
type deliveries struct{ d *dispatch.Dispatcher }

func (a deliveries) Dead(ctx context.Context, tenant string, f dispatch.Filter, cursor string, limit int) ([]dispatch.Row, string, error) {
	rows, next, err := a.d.Dead(ctx, tenant, f, cursor, limit)
	return rows, next, adminErr(err)
}

func (a deliveries) Retry(ctx context.Context, tenant string, id envelope.ID, sink string) error {
	return adminErr(a.d.Retry(ctx, tenant, id, sink))
}

func (a deliveries) RetryAll(ctx context.Context, tenant string, f dispatch.Filter) (int, error) {
	n, err := a.d.RetryAll(ctx, tenant, f)
	return n, adminErr(err)
}

func (a deliveries) Drop(ctx context.Context, tenant string, id envelope.ID, sink string) error {
	return adminErr(a.d.Drop(ctx, tenant, id, sink))
}

func (a deliveries) DropAll(ctx context.Context, tenant string, f dispatch.Filter) (int, error) {
	n, err := a.d.DropAll(ctx, tenant, f)
	return n, adminErr(err)
}

func (a deliveries) Attempts(ctx context.Context, tenant string, id envelope.ID) ([]dispatch.Attempt, error) {
	out, err := a.d.Attempts(ctx, tenant, id)
	return out, adminErr(err)
}

// adminErr maps dispatch's errors onto the admin API's.
func adminErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, dispatch.ErrNoDelivery):
		return fmt.Errorf("%w: %w", admin.ErrDeliveryNotFound, err)
	case errors.Is(err, dispatch.ErrBadCursor):
		return fmt.Errorf("%w: %w", admin.ErrBadCursor, err)
	case errors.Is(err, dispatch.ErrNotDead):
		return fmt.Errorf("%w: %w", admin.ErrNotDead, err)
	case errors.Is(err, dispatch.ErrNotQuarantined):
		return fmt.Errorf("%w: %w", admin.ErrNotQuarantined, err)
	case errors.Is(err, dispatch.ErrStillInvalid):
		reason := strings.TrimPrefix(err.Error(), dispatch.ErrStillInvalid.Error()+": ")
		return fmt.Errorf("%w: %s", admin.ErrStillInvalid, reason)
	case errors.Is(err, dispatch.ErrSourceGone):
		return fmt.Errorf("%w: %w", admin.ErrSourceGone, err)
	case errors.Is(err, dispatch.ErrBusy):
		return fmt.Errorf("%w: %w", admin.ErrBusy, err)
	}
	return err
}

// quarantine serves the admin API's quarantine routes from dispatch.
type quarantine struct{ d *dispatch.Dispatcher }

func (q quarantine) Quarantined(ctx context.Context, tenant string, f dispatch.Filter, cursor string, limit int) ([]dispatch.PenItem, string, error) {
	items, next, err := q.d.Quarantined(ctx, tenant, f, cursor, limit)
	return items, next, adminErr(err)
}

func (q quarantine) Release(ctx context.Context, tenant string, id envelope.ID, force bool, principal string) (dispatch.Released, error) {
	out, err := q.d.Release(ctx, tenant, id, force, principal)
	return out, adminErr(err)
}

func (q quarantine) Drop(ctx context.Context, tenant string, id envelope.ID, principal string) error {
	return adminErr(q.d.DropQuarantined(ctx, tenant, id, principal))
}

func (q quarantine) DropAll(ctx context.Context, tenant string, f dispatch.Filter, principal string) (int, error) {
	n, err := q.d.DropAllQuarantined(ctx, tenant, f, principal)
	return n, adminErr(err)
}

// openAdmin starts the admin listener over the stages that serve it.
func (n *node) openAdmin() error {
	opts := admin.Options{Tokens: n.cfg.Admin.Tokens, Logger: n.log}
	if n.wal != nil {
		opts.Health = n.wal
	}
	if n.segments != nil {
		opts.Hooks = hookFetcher{n.segments}
	}
	if n.dispatch != nil {
		opts.Deliveries = deliveries{n.dispatch}
		opts.Quarantine = quarantine{n.dispatch}
	}
	s, err := admin.Listen(n.cfg.Admin.Listen, opts)
	if err != nil {
		return err
	}
	n.admin = s
	return nil
}

// hookFetcher serves the admin API's hook fetch from the segment store.
type hookFetcher struct{ s *segment.Store }

func (f hookFetcher) Fetch(_ context.Context, _ string, id envelope.ID) (*envelope.Envelope, error) {
	e, err := f.s.Fetch(id)
	// A hook whose segment retention removed from local disk is read from
	// the archive; with no archive it is not on this node any more.
	if errors.Is(err, segment.ErrNotFound) || errors.Is(err, segment.ErrRemoved) {
		return nil, fmt.Errorf("%w: %w", admin.ErrHookNotFound, err)
	}
	return e, err
}
