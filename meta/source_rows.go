package meta

import (
	"bytes"
	"encoding/binary"
)

// rowSourceAt is where a row value's source (uvarint length, bytes)
// begins: after the fixed fields of version 1 (see Delivery).
const rowSourceAt = 2 + 2 + 4*8 + 2 + 16

// rowSourceIs reports whether the encoded row v names source src, without
// decoding the rest (a value that is not a row names none).
func rowSourceIs(v []byte, src []byte) bool {
	if len(v) < rowSourceAt || v[0] != deliveryVersion {
		return false
	}
	n, k := binary.Uvarint(v[rowSourceAt:])
	if k <= 0 || n != uint64(len(src)) {
		return false
	}
	rest := v[rowSourceAt+k:]
	return uint64(len(rest)) >= n && bytes.Equal(rest[:n], src)
}

// SourceRows calls fn with every delivery row, of every tenant, whose
// source is src (pending and dead alike), in key order, until fn says
// stop. The source lives in the row's value, not its key, so this is one
// pass over every row of the node: rows of other sources are skipped
// without decoding them, and memory stays constant whatever the count.
// It is for an operator's call (a source's deletion), not a hot path. A
// row that names src but does not decode is skipped. fn may write to the
// store: the rows are those of the store when SourceRows began.
func (s *Store) SourceRows(src string, fn func(id RowID, row *Delivery) (stop bool, err error)) error {
	name := []byte(src)
	lo, hi := prefixRange(prefixRow)
	var row Delivery
	return s.scan("delivery rows", lo, hi, func(k, v []byte) (bool, error) {
		if !rowSourceIs(v, name) {
			return false, nil
		}
		id, ok := parseRowKey(k)
		if !ok || DecodeDelivery(v, &row) != nil {
			return false, nil
		}
		return fn(id, &row)
	})
}
