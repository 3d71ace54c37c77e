package admin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/verify"
)

// What the admin API decides for the quarantine pen: whether a held hook
// may leave (a release without force verifies it again), and the audit
// row of every change, which the pen writes in the same synced batch as
// the change. The pen (package dispatch) owns the rows and the primitives.

// Audit actions of the pen's changes.
const (
	actionRelease       = "quarantine.release"
	actionReleaseForced = "quarantine.release_forced"
	actionDrop          = "quarantine.drop"
	actionDropAll       = "quarantine.drop_all"
)

// stillInvalidError: a release's verification with the source's current
// secrets failed; the hook stays in the pen. 409.
type stillInvalidError struct {
	// Reason is why, as the envelope names it (missing, malformed,
	// mismatch, expired).
	Reason string
}

func (e *stillInvalidError) Error() string {
	return "admin: the hook does not verify with the source's current secrets: " + e.Reason
}

// releaseHook releases tenant's held hook id. Without force it goes only
// once it verifies again (verifyAgain); with force it goes unverified and
// its deliveries say flagged. The audit row names principal.
func (h *quarantineHandlers) releaseHook(ctx context.Context, tenant string, id envelope.ID, force bool, principal string) (dispatch.Released, error) {
	it, err := h.q.QuarantinedHook(ctx, tenant, id)
	if err != nil {
		return dispatch.Released{}, err
	}
	mode, action := dispatch.ReleaseForced, actionReleaseForced
	if !force {
		if err := h.verifyAgain(it); err != nil {
			return dispatch.Released{}, err
		}
		mode, action = dispatch.ReleaseVerified, actionRelease
	}
	return h.q.Release(ctx, tenant, id, mode, h.auditRow(principal, action, tenant, it))
}

// verifyAgain verifies a held hook with its source's current secrets, at
// the time it was received (so a signed timestamp is as fresh as it was
// then): a *stillInvalidError when it still fails, dispatch.ErrSourceGone
// when the source no longer exists (nothing to verify it with, nor to
// deliver it to).
func (h *quarantineHandlers) verifyAgain(it dispatch.PenItem) error {
	src := h.sources.Snapshot().Lookup([]byte(it.Source))
	if src == nil {
		return dispatch.ErrSourceGone
	}
	e, err := h.hooks.Fetch(it.ID)
	if err != nil {
		return fmt.Errorf("cannot read the hook to verify it again: %w", err)
	}
	if err := src.Verifier.Verify(envHeaders(e.Headers), e.Body, time.Unix(0, e.ReceivedAt)); err != nil {
		return &stillInvalidError{Reason: envelope.FailureName(verify.Failure(err))}
	}
	return nil
}

// dropHook drops tenant's held hook id: it is never delivered.
func (h *quarantineHandlers) dropHook(ctx context.Context, tenant string, id envelope.ID, principal string) error {
	it, err := h.q.QuarantinedHook(ctx, tenant, id)
	if err != nil {
		return err
	}
	return h.q.DropQuarantined(ctx, tenant, id, h.auditRow(principal, actionDrop, tenant, it))
}

// penEvents are the lifecycle event verbs of the pen's actions.
var penEvents = map[string]string{
	actionRelease: "released", actionReleaseForced: "released", actionDrop: "dropped", actionDropAll: "bulk_dropped",
}

// auditRow records an action on one held hook, with its lifecycle event.
func (h *quarantineHandlers) auditRow(principal, action, tenant string, it dispatch.PenItem) meta.AuditRow {
	data := map[string]any{"event_id": it.ID.String(), "source": it.Source}
	if action != actionDrop {
		data["forced"] = action == actionReleaseForced
	}
	return meta.AuditRow{At: h.now().UTC(), Principal: principal, Action: action, Tenant: tenant,
		Entity: it.ID.String(), Detail: "source " + it.Source, Outcome: outcomeOK,
		Event: changeEvent("quarantine", penEvents[action], it.ID.String(), data)}
}

// dropAllAudit makes the audit row of each batch of a drop of every held
// hook passing f: how many, and the source when f names one.
func (h *quarantineHandlers) dropAllAudit(tenant string, f dispatch.Filter, principal string) func(n int) meta.AuditRow {
	return func(n int) meta.AuditRow {
		detail := fmt.Sprintf("%d hooks", n)
		if f.Source != "" {
			detail += ", source " + f.Source
		}
		return meta.AuditRow{At: h.now().UTC(), Principal: principal, Action: actionDropAll, Tenant: tenant, Detail: detail, Outcome: outcomeOK,
			Event: changeEvent("quarantine", penEvents[actionDropAll], tenant, bulkEventData(n, f))}
	}
}

// envHeaders reads a stored hook's headers as a verifier does a request's
// (names compared without case; the first field of a name wins, as
// fasthttp's Peek does).
type envHeaders []envelope.Header

func (h envHeaders) Peek(key string) []byte {
	for _, f := range h {
		if strings.EqualFold(f.Name, key) {
			return []byte(f.Value)
		}
	}
	return nil
}
