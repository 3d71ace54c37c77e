package archive

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ankusa/ankusa/meta"
)

// Reader serves ranged reads of one node's archived segments: it is the
// segment store's Remote, so fetch by id and delivery retries read a
// segment that retention removed from local disk, one block per read.
type Reader struct {
	b       Backend
	l       Layout
	node    string
	timeout time.Duration
}

// NewReader reads node's segments in b.
func NewReader(b Backend, l Layout, node string) *Reader {
	return &Reader{b: b, l: l, node: node, timeout: 30 * time.Second}
}

// Open implements segment.Remote.
func (r *Reader) Open(e *meta.SegmentEntry) (string, io.ReaderAt) {
	key := r.l.SegmentKey(r.node, e)
	return r.b.String() + "/" + key, rangeReader{r: r, key: key}
}

type rangeReader struct {
	r   *Reader
	key string
}

func (rr rangeReader) ReadAt(p []byte, off int64) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rr.r.timeout)
	defer cancel()
	remoteReads.Inc()
	if err := rr.r.b.ReadAt(ctx, rr.key, p, off); err != nil {
		remoteReadErrors.Inc()
		return 0, fmt.Errorf("archive: read %s: %w", rr.key, err)
	}
	remoteReadBytes.Add(len(p))
	return len(p), nil
}
