package source

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/secrets"
)

// RewrapOptions configure Rewrap.
type RewrapOptions struct {
	Config  *config.Config
	Keyring *secrets.Keyring
	// Meta is the node's meta store (the node is stopped).
	Meta *meta.Store
	// Redis, when not nil, is the redis store's client: its namespace is
	// rewrapped too (its nodes may be running: each record is written
	// with check-and-set, and they reload it).
	Redis     *redis.Client
	Addr      string
	Namespace string
	// Rate bounds the sources rewritten per second (0: no bound), to
	// spare a busy Redis.
	Rate int
	// Progress, when not nil, is told how far each part is, every 100
	// sources read.
	Progress func(part string, read, rewrapped int)
}

// RewrapPart is what Rewrap did in one place.
type RewrapPart struct {
	// Part names the place: "meta store", "redis namespace ...", "local
	// mirror".
	Part string
	// Read sources; Rewrapped of them, holding Secrets secrets in clear
	// or under the previous key; Skipped: changed by a node while the
	// rewrap read them (rewrapped by that write, or by the next run).
	Read, Rewrapped, Secrets, Skipped int
}

// Rewrap seals every stored secret under the keyring's current key: the
// persistent store's records, the redis store's namespace and this
// node's mirror of it. A record already sealed under the current key is
// left as it is, so a rewrap killed midway and run again finishes the
// work, and a second run rewraps nothing. A record no configured key
// opens stops it, naming the source and the field.
func Rewrap(ctx context.Context, o RewrapOptions) ([]RewrapPart, error) {
	if !o.Keyring.Enabled() {
		return nil, fmt.Errorf("secrets.kek is not set: there is no key to seal under")
	}
	var pace func()
	if o.Rate > 0 {
		every := time.Second / time.Duration(o.Rate)
		next := time.Now()
		pace = func() {
			next = next.Add(every)
			select {
			case <-time.After(time.Until(next)):
			case <-ctx.Done():
			}
		}
	}
	rewrap := func(tenant, name string, record []byte) (out []byte, n int, err error) {
		rec, spec, st, err := decodeSourceRecord(tenant, name, record, o.Config.Dedupe.TTL, o.Keyring)
		if err != nil {
			return nil, 0, err
		}
		if !st.NeedsRewrap() {
			return nil, 0, nil
		}
		if pace != nil {
			pace()
		}
		src := &Source{Name: name, TenantID: tenant, Spec: spec, Created: rec.Created, Updated: rec.Updated}
		return encodeSourceRecord(src, o.Keyring), st.Previous + st.Clear, nil
	}
	progress := func(p *RewrapPart) {
		if o.Progress != nil && p.Read%100 == 0 {
			o.Progress(p.Part, p.Read, p.Rewrapped)
		}
	}
	var parts []RewrapPart

	// The persistent store's records, and the local mirror's: written in
	// batches of 100, synced.
	for _, local := range []struct {
		part string
		list func(fn func(tenant, name string, version uint64, record []byte) error) error
		put  func(b *meta.Batch, tenant, name string, version uint64, record []byte)
	}{
		{"meta store", func(fn func(string, string, uint64, []byte) error) error {
			return o.Meta.Sources(func(t, n string, r []byte) error { return fn(t, n, 0, r) })
		}, func(b *meta.Batch, t, n string, _ uint64, r []byte) { b.PutSource(t, n, r) }},
		{"local mirror", func(fn func(string, string, uint64, []byte) error) error {
			return o.Meta.Mirrored(meta.MirrorSource, fn)
		}, func(b *meta.Batch, t, n string, v uint64, r []byte) { b.PutMirrored(meta.MirrorSource, t, n, v, r) }},
	} {
		p := RewrapPart{Part: local.part}
		b := o.Meta.NewBatch()
		flush := func() error {
			if b.Empty() {
				return nil
			}
			err := b.Commit(meta.Sync)
			b.Reset()
			return err
		}
		err := local.list(func(tenant, name string, version uint64, record []byte) error {
			if len(record) == 0 {
				return nil // the mirror's record of a removal
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			out, n, err := rewrap(tenant, name, record)
			if err != nil {
				return err
			}
			p.Read++
			if out != nil {
				local.put(b, tenant, name, version, out)
				p.Rewrapped++
				p.Secrets += n
				if b.Len() >= 100 {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			progress(&p)
			return nil
		})
		if err == nil {
			err = flush()
		}
		b.Close()
		if err != nil {
			return parts, fmt.Errorf("%s: %w", local.part, err)
		}
		parts = append(parts, p)
	}
	// The older values of what was rewritten (in clear, or under the
	// previous key) leave the meta store's files.
	if err := o.Meta.CompactSourceRecords(); err != nil {
		return parts, err
	}
	if o.Redis == nil {
		return parts, nil
	}

	// The redis namespace: each record rewritten on its own, checked
	// against the version it was read at, so a node's write in between
	// wins (and the next run looks at it again). It reads the store as far
	// as its version when the rewrap began: a rewritten record moves past
	// that, and is not read twice.
	k := newFleetKeys(o.Namespace)
	p := RewrapPart{Part: fmt.Sprintf("redis namespace %q", o.Namespace)}
	mark := newChangeID() // one write mark for the whole run: no audit row waits on it
	var after, upTo uint64
	for first := true; ; first = false {
		batch, err := k.fetchChanges(ctx, o.Redis, after, fleetBatchLimit)
		if err != nil {
			return parts, fmt.Errorf("source_store.url %s: %w", o.Addr, err)
		}
		if first {
			upTo = batch.version
		}
		done := len(batch.changes) < fleetBatchLimit
		for _, c := range batch.changes {
			if c.version > upTo {
				done = true
				break
			}
			after = max(after, c.version)
			if c.route || c.record == nil {
				continue
			}
			out, n, err := rewrap(c.tenant, c.name, c.record)
			if err != nil {
				return parts, err
			}
			p.Read++
			if out != nil {
				ok, err := k.rewrite(ctx, o.Redis, batch.epoch, mark, c, out)
				if err != nil {
					return parts, fmt.Errorf("source_store.url %s: %w", o.Addr, err)
				}
				if ok {
					p.Rewrapped++
					p.Secrets += n
				} else {
					p.Skipped++
				}
			}
			progress(&p)
		}
		if done {
			break
		}
	}
	return append(parts, p), nil
}

// rewrite writes a source's record back re-sealed, if it is still at the
// version it was read at; false when a node changed it since.
func (k fleetKeys) rewrite(ctx context.Context, rdb *redis.Client, epoch, mark string, c change, record []byte) (bool, error) {
	keys := []string{k.ver, k.log, k.prefix + "w/" + mark, k.epoch, k.prefix + c.member}
	args := []any{k.channel, markTTL, epoch, "put", c.version, c.member, string(record), c.tenant}
	res, err := writeScript.Run(ctx, rdb, keys, args...).StringSlice()
	if err != nil {
		return false, err
	}
	switch {
	case len(res) > 0 && res[0] == "ok":
		return true, nil
	case len(res) > 0 && (res[0] == "conflict" || res[0] == "epoch"):
		return false, nil
	}
	return false, fmt.Errorf("the write script answered %q", res)
}
