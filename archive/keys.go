package archive

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// Layout names the objects of one archive: its key prefix (archive.prefix,
// may be empty).
type Layout struct{ Prefix string }

func (l Layout) join(parts ...string) string {
	p := strings.Trim(l.Prefix, "/")
	if p == "" {
		return strings.Join(parts, "")
	}
	return p + "/" + strings.Join(parts, "")
}

// SegmentsPrefix is where every node's segments are.
func (l Layout) SegmentsPrefix() string { return l.join("segments/") }

// NodePrefix is where one node's segments are.
func (l Layout) NodePrefix(node string) string { return l.join("segments/node=", node, "/") }

// catSuffix ends the key of a catalogue object; a segment object's key
// ends in segment.Suffix, its local file's.
const catSuffix = ".cat"

// SegmentKey is the key of a segment's file; CatalogueKey is the key of
// its catalogue entry beside it.
func (l Layout) SegmentKey(node string, e *meta.SegmentEntry) string {
	return l.segmentStem(node, e) + segment.Suffix
}

// CatalogueKey is the key of a segment's catalogue object.
func (l Layout) CatalogueKey(node string, e *meta.SegmentEntry) string {
	return l.segmentStem(node, e) + catSuffix
}

func (l Layout) segmentStem(node string, e *meta.SegmentEntry) string {
	day := time.Unix(0, e.MinReceivedAt).UTC()
	return l.join("segments/node=", node, "/", day.Format("2006/01/02"), "/", segment.Stem(e.FirstSeq, e.LastSeq))
}

// TombstonesPrefix is where the erase job writes tombstones.
func (l Layout) TombstonesPrefix() string { return l.join("tombstones/") }

// TombstoneKey is the key of tenant t's tombstone.
func (l Layout) TombstoneKey(t string) string { return l.join("tombstones/tenant=", t, ".json") }

// Catalogue is a segment's catalogue entry as archived beside it: what
// replay needs to choose segments without reading them.
type Catalogue struct {
	Node          string    `json:"node"`
	Name          string    `json:"name"`
	FirstSeq      uint64    `json:"first_seq"`
	LastSeq       uint64    `json:"last_seq"`
	FirstID       string    `json:"first_id"`
	LastID        string    `json:"last_id"`
	MinReceivedAt time.Time `json:"min_received_at"`
	MaxReceivedAt time.Time `json:"max_received_at"`
	Count         uint64    `json:"count"`
	RawBytes      uint64    `json:"raw_bytes"`
	Size          int64     `json:"size"`
	SealedAt      time.Time `json:"sealed_at"`
	// SHA256 is the hex SHA-256 of the segment object.
	SHA256 string `json:"sha256"`
}

// catalogueOf builds the archived form of a catalogue entry.
func catalogueOf(node string, e *meta.SegmentEntry, sum string) Catalogue {
	return Catalogue{
		Node: node, Name: e.Name, FirstSeq: e.FirstSeq, LastSeq: e.LastSeq,
		FirstID: e.FirstID.String(), LastID: e.LastID.String(),
		MinReceivedAt: time.Unix(0, e.MinReceivedAt).UTC(), MaxReceivedAt: time.Unix(0, e.MaxReceivedAt).UTC(),
		Count: e.Count, RawBytes: e.RawBytes, Size: e.Size,
		SealedAt: time.Unix(0, e.SealedAt).UTC(), SHA256: sum,
	}
}

// Marshal encodes c (deterministically: the same entry always gives the
// same bytes, so a re-upload after a crash finds the same object).
func (c *Catalogue) Marshal() []byte {
	b, _ := json.Marshal(c) // plain fields: cannot fail
	return append(b, '\n')
}

// ParseCatalogue decodes and checks a catalogue object read from key.
func ParseCatalogue(key string, data []byte) (Catalogue, error) {
	var c Catalogue
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("archive: catalogue object %s: %w", key, err)
	}
	bad := func(why string) (Catalogue, error) {
		return c, fmt.Errorf("archive: catalogue object %s: %s", key, why)
	}
	switch {
	case c.Node == "":
		return bad("no node")
	case c.FirstSeq == 0 || c.LastSeq < c.FirstSeq:
		return bad(fmt.Sprintf("seqs %d..%d", c.FirstSeq, c.LastSeq))
	case c.Count != c.LastSeq-c.FirstSeq+1:
		return bad(fmt.Sprintf("count %d for seqs %d..%d", c.Count, c.FirstSeq, c.LastSeq))
	case c.Size <= 0:
		return bad(fmt.Sprintf("size %d", c.Size))
	case len(c.SHA256) != 64:
		return bad("no sha256")
	case c.MaxReceivedAt.Before(c.MinReceivedAt):
		return bad("max_received_at before min_received_at")
	}
	for _, id := range []string{c.FirstID, c.LastID} {
		if _, err := envelope.ParseID([]byte(id)); err != nil {
			return bad(fmt.Sprintf("event id %q: %v", id, err))
		}
	}
	return c, nil
}

// cutObjectSuffix splits a segment or catalogue object's key into the key
// without its suffix and which of the two it is.
func cutObjectSuffix(key string) (stem string, isCat, ok bool) {
	if stem, ok := strings.CutSuffix(key, catSuffix); ok {
		return stem, true, true
	}
	stem, ok = strings.CutSuffix(key, segment.Suffix)
	return stem, false, ok
}
