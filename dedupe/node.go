package dedupe

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// Node is the node scope: keys in the node's meta store under
// dd/<expiry day>/<ordinal>/<source>/<hash> (DESIGN.md §6 item 5). The
// dispatcher's row writer writes them with the hook's rows (AddKey), so
// they are durable with the dispatch checkpoint and rebuilt past it like
// rows; Lookup reads them; Sweep deletes a past day with one range delete.
type Node struct {
	db      *pebble.DB
	ordinal func(tenant string) (uint32, bool)
}

// NewNode reads keys from db; ordinal maps a tenant to its ordinal (a
// tenant without one has no keys).
func NewNode(db *pebble.DB, ordinal func(string) (uint32, bool)) *Node {
	return &Node{db: db, ordinal: ordinal}
}

// Lookup returns the id of the hook that committed k and has not expired
// at now (unix ns). A key kept for ttl is filed under the day it expires,
// so the days from now's to now+ttl's are the ones to look in.
func (n *Node) Lookup(k Key, ttl time.Duration, now int64) (envelope.ID, bool, error) {
	ord, ok := n.ordinal(k.Tenant)
	if !ok {
		return envelope.ID{}, false, nil
	}
	var buf [128]byte
	for day := meta.DedupeDay(now); day <= meta.DedupeDay(now+int64(ttl)); day++ {
		key := meta.DedupeKey(buf[:0], day, ord, k.Source, k.Hash[:])
		v, closer, err := n.db.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return envelope.ID{}, false, fmt.Errorf("cannot read a dedupe key: %w", err)
		}
		var dv meta.DedupeValue
		err = meta.DecodeDedupeValue(v, &dv)
		closer.Close()
		if err != nil {
			// A damaged key must not drop a hook: it is not a match.
			badValues.Inc()
			continue
		}
		if dv.Expiry > now {
			return dv.EventID, true, nil
		}
	}
	return envelope.ID{}, false, nil
}

// AddKey adds the node-scope key of a committed hook to b: the hook of
// tenant ordinal ord and source, with raw dedupe key raw, received at
// receivedAt and kept for ttl.
func AddKey(b *pebble.Batch, ord uint32, tenant, source string, raw []byte, id envelope.ID, seq uint64, receivedAt int64, ttl time.Duration) error {
	k := MakeKey(tenant, source, raw)
	expiry := receivedAt + int64(ttl)
	v := meta.DedupeValue{EventID: id, Expiry: expiry, Seq: seq}
	var kb [128]byte
	var vb [32]byte
	return b.Set(meta.DedupeKey(kb[:0], meta.DedupeDay(expiry), ord, source, k.Hash[:]), v.AppendTo(vb[:0]), nil)
}

// Sweep deletes every key filed under a day before now's (one range
// delete: their expiry is past). A key expiring later today stays until
// tomorrow's sweep; Lookup checks its expiry.
func Sweep(db *pebble.DB, now int64) error {
	lo := []byte(meta.PrefixDedupe)
	hi := meta.DedupeDayPrefix(meta.DedupeDay(now))
	if err := db.DeleteRange(lo, hi, pebble.NoSync); err != nil {
		return fmt.Errorf("cannot sweep expired dedupe keys: %w", err)
	}
	return nil
}
