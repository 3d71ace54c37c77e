package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

// drainPoll is how often the drain looks at the sinks and the archive.
const drainPoll = 2 * time.Second

// Check is the comparison of what was acknowledged with what each sink
// and the archive hold.
type Check struct {
	Sinks   []SinkCheck `json:"sinks"` // http, amqp, archive
	DrainS  float64     `json:"drain_s"`
	Drained bool        `json:"drained"` // everything arrived within -drain
}

// SinkCheck is one sink's (or the archive's) side of the comparison.
type SinkCheck struct {
	Name string `json:"name"`
	// Missing and Differing are acknowledged hooks absent from the sink,
	// and those whose body there (any delivery) differs from the one sent;
	// Examples lists a few of their ids.
	Missing   int      `json:"missing"`
	Differing int      `json:"differing"`
	Examples  []string `json:"examples,omitempty"`
	// Received is hooks received (distinct ids); Deliveries counts every
	// delivery; Duplicated is hooks received more than once; Unacked is
	// hooks received that no 201 acknowledged (committed, the answer
	// lost to a kill or a timeout); NoID is deliveries without an id.
	Received   int   `json:"received"`
	Deliveries int64 `json:"deliveries"`
	Duplicated int   `json:"duplicated"`
	Unacked    int   `json:"unacked"`
	NoID       int64 `json:"no_id"`
	// MaxDelayS is the longest time from a 201 to the hook's first
	// delivery (not for the archive); P99DelayS its 99th percentile.
	MaxDelayS float64 `json:"max_delay_s,omitempty"`
	P99DelayS float64 `json:"p99_delay_s,omitempty"`
	// IntervalMaxDelayS is the longest delay of the hooks acknowledged in
	// each interval of the timeline.
	IntervalMaxDelayS []float64 `json:"interval_max_delay_s,omitempty"`
}

// DuplicateRate is the share of received hooks delivered more than once.
func (c SinkCheck) DuplicateRate() float64 {
	if c.Received == 0 {
		return 0
	}
	return float64(c.Duplicated) / float64(c.Received)
}

// check waits up to -drain for every acknowledged hook to reach both
// sinks and the archive, then compares.
func (s *soak) check(ctx context.Context, acked map[string]ack) (Check, error) {
	arch, err := newArchiveReader(s.s3)
	if err != nil {
		return Check{}, err
	}
	began := time.Now()
	deadline := began.Add(s.o.Drain)
	drained := false
	for {
		if err := arch.refresh(ctx); err != nil {
			s.tl.event("archive listing: %v", err)
		}
		if missingAny(acked, s.receiver.rec, s.consumer.rec, arch.rec) == 0 {
			drained = true
			break
		}
		if time.Now().After(deadline) || sleep(ctx, drainPoll) != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return Check{}, ctx.Err()
	}
	c := Check{DrainS: time.Since(began).Seconds(), Drained: drained}
	for _, r := range []*record{s.receiver.rec, s.consumer.rec, arch.rec} {
		var iv *intervals
		if r != arch.rec {
			iv = &intervals{start: s.tl.start, width: s.o.Interval}
		}
		c.Sinks = append(c.Sinks, compare(acked, r, iv))
	}
	return c, nil
}

// missingAny counts acknowledged hooks missing from at least one record.
func missingAny(acked map[string]ack, recs ...*record) int {
	n := 0
	for id := range acked {
		for _, r := range recs {
			if _, ok := r.get(id); !ok {
				n++
				break
			}
		}
	}
	return n
}

// maxExamples bounds the ids a SinkCheck lists.
const maxExamples = 10

// intervals are the timeline's: where a delay is counted, by the time of
// the hook's 201.
type intervals struct {
	start time.Time
	width time.Duration
}

// compare holds one record against the acknowledged hooks; iv, when the
// record's first-delivery times are deliveries (not archive reads), is
// where to count their delays.
func compare(acked map[string]ack, r *record, iv *intervals) SinkCheck {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := SinkCheck{Name: r.name, Received: len(r.byID), Deliveries: r.total, NoID: r.noID}
	var lat []time.Duration
	ids := make([]string, 0, len(acked))
	for id := range acked {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		a := acked[id]
		d, ok := r.byID[id]
		switch {
		case !ok:
			c.Missing++
			c.example("missing " + id)
			continue
		case d.sum != a.sum || d.differ:
			c.Differing++
			c.example("differing " + id)
		}
		if iv != nil {
			delay := max(0, d.first.Sub(a.at))
			lat = append(lat, delay)
			c.noteDelay(iv, a.at, delay)
		}
	}
	for id, d := range r.byID {
		if d.n > 1 {
			c.Duplicated++
		}
		if _, ok := acked[id]; !ok {
			c.Unacked++
		}
	}
	if len(lat) > 0 {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		c.MaxDelayS = lat[len(lat)-1].Seconds()
		c.P99DelayS = lat[min(len(lat)-1, len(lat)*99/100)].Seconds()
	}
	return c
}

func (c *SinkCheck) noteDelay(iv *intervals, at time.Time, delay time.Duration) {
	i := max(0, int(at.Sub(iv.start)/iv.width))
	for len(c.IntervalMaxDelayS) <= i {
		c.IntervalMaxDelayS = append(c.IntervalMaxDelayS, 0)
	}
	c.IntervalMaxDelayS[i] = max(c.IntervalMaxDelayS[i], delay.Seconds())
}

func (c *SinkCheck) example(s string) {
	if len(c.Examples) < maxExamples {
		c.Examples = append(c.Examples, s)
	}
}

// archiveReader reads the bucket's segment objects with the segment
// package's reader into a record (a hook in two objects counts as a
// duplicate).
type archiveReader struct {
	s3   *s3Server
	c    *minio.Client
	dec  *segment.Decoder
	read map[string]bool // object keys read
	rec  *record
}

func newArchiveReader(s *s3Server) (*archiveReader, error) {
	c, err := s.client()
	if err != nil {
		return nil, err
	}
	return &archiveReader{s3: s, c: c, dec: segment.NewDecoder(), read: map[string]bool{}, rec: newRecord("archive")}, nil
}

// refresh reads the segment objects not read yet.
func (a *archiveReader) refresh(ctx context.Context) error {
	for o := range a.c.ListObjects(ctx, a.s3.bucket, minio.ListObjectsOptions{Prefix: "soak/segments/", Recursive: true}) {
		if o.Err != nil {
			return o.Err
		}
		if !strings.HasSuffix(o.Key, ".seg") || a.read[o.Key] {
			continue
		}
		if err := a.readObject(ctx, o.Key); err != nil {
			return err
		}
		a.read[o.Key] = true
	}
	return nil
}

func (a *archiveReader) readObject(ctx context.Context, key string) error {
	obj, err := a.c.GetObject(ctx, a.s3.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", key, err)
	}
	return readSegment(key, data, a.dec, a.rec)
}

// readSegment adds every hook of the segment in data to rec, checking
// each block's checksum on the way.
func readSegment(key string, data []byte, dec *segment.Decoder, rec *record) error {
	f, err := segment.OpenReaderAt(key, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	now := time.Now()
	var raw []byte
	for i := range f.Index {
		raw, err = f.ReadBlock(i, dec, raw[:0])
		if err != nil {
			return err
		}
		err = segment.Records(raw, func(p []byte) error {
			var e envelope.Envelope
			if _, err := envelope.Decode(p, &e); err != nil {
				return fmt.Errorf("%s block %d: %w", key, i, err)
			}
			rec.add(e.ID.String(), e.Body, now)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// sumOf is the sha256 of b (tests).
func sumOf(b []byte) [32]byte { return sha256.Sum256(b) }
