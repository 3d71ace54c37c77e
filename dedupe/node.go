package dedupe

import (
	"time"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// Node is the node scope: keys in the node's meta store (dd/, filed by
// expiry day; DESIGN.md §6 item 5). The dispatcher's row writer adds them
// to the batch of the hook's rows (AddKey), so they are durable with the
// dispatch checkpoint and rebuilt past it like rows; Lookup reads them;
// the dispatcher sweeps a past day with one range delete
// (meta.Store.SweepDedupe).
type Node struct {
	store   *meta.Store
	ordinal func(tenant string) (uint32, bool)
}

// NewNode reads keys from store; ordinal maps a tenant to its ordinal (a
// tenant without one has no keys).
func NewNode(store *meta.Store, ordinal func(string) (uint32, bool)) *Node {
	return &Node{store: store, ordinal: ordinal}
}

// Lookup returns the id of the hook that committed k and has not expired
// at now (unix ns), for a source that keeps keys for ttl. A stored value
// that does not decode is not a match: it must not drop a hook.
func (n *Node) Lookup(k Key, ttl time.Duration, now int64) (envelope.ID, bool, error) {
	ord, ok := n.ordinal(k.Tenant)
	if !ok {
		return envelope.ID{}, false, nil
	}
	v, found, damaged, err := n.store.LookupDedupe(ord, k.Source, k.Hash[:], ttl, now)
	badValues.Add(damaged)
	if err != nil || !found {
		return envelope.ID{}, false, err
	}
	return v.EventID, true, nil
}

// AddKey adds the node-scope key of a committed hook to b: the hook of
// tenant ordinal ord and source, with raw dedupe key raw, received at
// receivedAt and kept for ttl.
func AddKey(b *meta.Batch, ord uint32, tenant, source string, raw []byte, id envelope.ID, seq uint64, receivedAt int64, ttl time.Duration) {
	k := MakeKey(tenant, source, raw)
	v := meta.DedupeValue{EventID: id, Expiry: receivedAt + int64(ttl), Seq: seq}
	b.AddDedupe(ord, source, k.Hash[:], &v)
}
