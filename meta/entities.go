package meta

import "fmt"

// Sources and routes written through the admin API (package source owns
// their records; meta keeps the bytes). Each is one key, written in a
// synced batch with its audit row.

// PutSource adds the write of a source record to the batch.
func (b *Batch) PutSource(tenant, name string, record []byte) {
	b.set(entityKey(prefixSource, tenant, name), record)
}

// DeleteSource adds the removal of a source record to the batch.
func (b *Batch) DeleteSource(tenant, name string) { b.del(entityKey(prefixSource, tenant, name)) }

// PutRoute adds the write of a route record to the batch.
func (b *Batch) PutRoute(tenant, id string, record []byte) {
	b.set(entityKey(prefixRoute, tenant, id), record)
}

// DeleteRoute adds the removal of a route record to the batch.
func (b *Batch) DeleteRoute(tenant, id string) { b.del(entityKey(prefixRoute, tenant, id)) }

// Sources calls fn with every stored source record, by tenant then name.
// The record is valid only during the call.
func (s *Store) Sources(fn func(tenant, name string, record []byte) error) error {
	return s.entities("stored sources", prefixSource, fn)
}

// Routes calls fn with every stored route record, by tenant then id. The
// record is valid only during the call.
func (s *Store) Routes(fn func(tenant, id string, record []byte) error) error {
	return s.entities("stored routes", prefixRoute, fn)
}

func (s *Store) entities(what, prefix string, fn func(tenant, name string, record []byte) error) error {
	lo, hi := prefixRange(prefix)
	return s.scan(what, lo, hi, func(k, v []byte) (bool, error) {
		tenant, name, ok := parseEntityKey(prefix, k)
		if !ok {
			return true, fmt.Errorf("%w: key %q in %s names no tenant", ErrBadRecord, k, what)
		}
		return false, fn(tenant, name, v)
	})
}
