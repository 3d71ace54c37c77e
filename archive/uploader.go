package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/internal/backoff"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// UploaderOptions configure an Uploader.
type UploaderOptions struct {
	Backend Backend
	Layout  Layout
	// Node is node.name: part of every key.
	Node string
	// Meta holds the catalogue the uploader follows and marks.
	Meta *meta.Store
	// FS and Dir are where the local segment files are.
	FS  vfs.FS
	Dir string
	// Concurrency bounds the uploads in flight (default 4).
	Concurrency int
	// RetryBase and RetryMax bound the backoff between the attempts of
	// one upload: full jitter over base·2^n, at most max (defaults 500ms
	// and 1m).
	RetryBase, RetryMax time.Duration
	// Sealed is signalled after each seal (segment.Store.Sealed): the
	// catalogue is read again at once.
	Sealed <-chan struct{}
	// Poll is how often the catalogue is read when no seal says so
	// (default 5s).
	Poll   time.Duration
	Logger *zap.Logger
	Now    func() time.Time
	// OnFatal is called once if the archived mark cannot be written: the
	// meta store failed, and the node must stop (DESIGN.md §6 item 8).
	OnFatal func(error)
}

// Uploader ships sealed segments to the archive and marks them archived.
type Uploader struct {
	o      UploaderOptions
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	inflight map[uint64]bool // by last seq
	from     uint64          // every entry below it is archived or removed
	failed   bool
}

// StartUploader starts the uploader's loop.
func StartUploader(o UploaderOptions) (*Uploader, error) {
	if o.Backend == nil || o.Meta == nil || o.FS == nil || o.Node == "" {
		return nil, errors.New("archive: uploader needs a backend, the meta store, the segment file system and the node name")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 500 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OnFatal == nil {
		o.OnFatal = func(error) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	u := &Uploader{o: o, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}), inflight: map[uint64]bool{}}
	go u.loop()
	return u, nil
}

// Notify tells the uploader a segment was sealed.
func (u *Uploader) Notify() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// Close stops the uploader: uploads in flight are abandoned (their
// segments are uploaded again at the next start) and Close waits for them.
func (u *Uploader) Close() {
	u.cancel()
	<-u.done
	u.wg.Wait()
}

func (u *Uploader) loop() {
	defer close(u.done)
	tick := time.NewTicker(u.o.Poll)
	defer tick.Stop()
	for {
		if err := u.scan(); err != nil {
			u.o.Logger.Error("archive: cannot read the catalogue", zap.Error(err))
		}
		select {
		case <-u.ctx.Done():
			return
		case <-u.wake:
		case <-u.o.Sealed:
		case <-tick.C:
		}
	}
}

// scan reads the catalogue from the first entry not archived yet, starts
// uploads for what is not in flight, up to the concurrency bound, and
// updates the lag figures.
func (u *Uploader) scan() error {
	// The catalogue is read under u.mu: an upload marks its entry before
	// it leaves the in-flight set (under u.mu), so an entry seen unmarked
	// here is either in flight or not uploaded yet, never uploaded twice.
	u.mu.Lock()
	defer u.mu.Unlock()
	from, failed := u.from, u.failed
	if failed {
		return nil
	}
	var (
		pending     int
		oldest      int64
		start       []meta.SegmentEntry
		first, seen uint64
	)
	err := u.o.Meta.Segments(from, func(e meta.SegmentEntry) bool {
		seen = e.LastSeq
		if e.Archived {
			return true
		}
		if e.Removed {
			// Removed before it was archived (retention ran with archive:
			// none): it cannot be uploaded any more.
			u.o.Logger.Warn("archive: a segment was removed from local disk before archiving was configured; it is not in the archive", zap.String("segment", e.Name))
			return true
		}
		if first == 0 {
			first = e.FirstSeq
		}
		pending++
		if oldest == 0 || e.SealedAt < oldest {
			oldest = e.SealedAt
		}
		start = append(start, e)
		return true
	})
	if err != nil {
		return err
	}
	lagSegments.Set(float64(pending))
	if oldest != 0 {
		lagSeconds.Set(max(0, u.o.Now().Sub(time.Unix(0, oldest)).Seconds()))
	} else {
		lagSeconds.Set(0)
	}
	switch {
	case first != 0:
		u.from = first
	case seen != 0:
		u.from = seen + 1
	}
	for _, e := range start {
		if len(u.inflight) >= u.o.Concurrency {
			break
		}
		if u.inflight[e.LastSeq] {
			continue
		}
		u.inflight[e.LastSeq] = true
		u.wg.Add(1)
		go u.run(e)
	}
	return nil
}

// run uploads one segment until it is archived or the uploader stops.
func (u *Uploader) run(e meta.SegmentEntry) {
	defer u.wg.Done()
	defer func() {
		u.mu.Lock()
		delete(u.inflight, e.LastSeq)
		u.mu.Unlock()
		u.Notify()
	}()
	log := u.o.Logger.With(zap.String("segment", e.Name))
	for attempt := 1; ; attempt++ {
		err := u.upload(&e)
		if err == nil || u.ctx.Err() != nil {
			return
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			u.mu.Lock()
			u.failed = true
			u.mu.Unlock()
			log.Error("archive: cannot mark a segment archived; the node must stop", zap.Error(err))
			u.o.OnFatal(err)
			return
		}
		uploadFailures.Inc()
		wait := u.backoff(attempt)
		log.Warn("archive: upload failed; retrying", zap.Int("attempt", attempt), zap.Duration("retry_in", wait), zap.Error(err))
		select {
		case <-u.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// backoff is the wait after failed attempt n (from 1): full jitter over
// RetryBase·2^(n-1), at most RetryMax.
func (u *Uploader) backoff(attempt int) time.Duration {
	return backoff.Full(attempt-1, u.o.RetryBase, u.o.RetryMax)
}

// fatalError is a failure of the node's own storage, not of the archive.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }
func (f *fatalError) Unwrap() error { return f.err }

// upload ships one segment and its catalogue object, then writes the
// synced archived mark.
func (u *Uploader) upload(e *meta.SegmentEntry) error {
	began := time.Now()
	path := u.o.FS.PathJoin(u.o.Dir, e.Name)
	f, err := u.o.FS.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if now, ok, lerr := u.o.Meta.SegmentBySeq(e.LastSeq); lerr == nil && ok && now.Removed {
				u.o.Logger.Error("archive: a segment was removed from local disk before it was archived", zap.String("segment", e.Name))
				return nil
			}
		}
		return fmt.Errorf("cannot open segment %q: %w", path, err)
	}
	defer f.Close()
	if err := checkLocal(u.o.FS, path); err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(f, 0, e.Size+1))
	if err != nil {
		return fmt.Errorf("cannot read segment %q: %w", path, err)
	}
	if n != e.Size {
		return fmt.Errorf("segment %q has %d bytes; the catalogue says %d", path, n, e.Size)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	segKey := u.o.Layout.SegmentKey(u.o.Node, e)
	if err := u.put(segKey, io.NewSectionReader(f, 0, e.Size), e.Size, sum); err != nil {
		return err
	}
	cat := catalogueOf(u.o.Node, e, sum)
	data := cat.Marshal()
	catSum := sha256.Sum256(data)
	if err := u.put(u.o.Layout.CatalogueKey(u.o.Node, e), bytes.NewReader(data), int64(len(data)), hex.EncodeToString(catSum[:])); err != nil {
		return err
	}
	uploadedTotal.Inc()
	uploadBytes.Add(int(e.Size) + len(data))
	uploadSeconds.UpdateDuration(began)
	if _, ok, err := u.o.Meta.UpdateSegment(e.LastSeq, func(e *meta.SegmentEntry) { e.Archived = true }); err != nil {
		return &fatalError{fmt.Errorf("cannot mark segment %s archived: %w", e.Name, err)}
	} else if !ok {
		return &fatalError{fmt.Errorf("cannot mark segment %s archived: its catalogue entry is gone", e.Name)}
	}
	u.o.Logger.Debug("archive: segment archived", zap.String("segment", e.Name), zap.String("key", segKey))
	return nil
}

// checkLocal checks a segment's footer, index and block CRCs before it
// is uploaded: the archive's copy is what a damaged local file is
// restored from, so damaged bytes are not archived (the upload is retried
// with its backoff; the segment store's scrubber reports the damage).
func checkLocal(fs vfs.FS, path string) error {
	f, err := segment.OpenFile(fs, path)
	if err != nil {
		return fmt.Errorf("not archived: %w", err)
	}
	defer f.Close()
	if err := f.CheckBlocks(); err != nil {
		return fmt.Errorf("not archived: %w", err)
	}
	return nil
}

// put writes one object; an object already at the key with the same
// content is a success (an upload a crash kept from being marked), one
// with other content is an error that retrying will not fix but that an
// operator must see.
func (u *Uploader) put(key string, r io.Reader, size int64, sum string) error {
	err := u.o.Backend.Put(u.ctx, key, r, size, sum)
	if err == nil || !errors.Is(err, ErrExists) {
		return err
	}
	obj, serr := u.o.Backend.Stat(u.ctx, key)
	if serr != nil {
		return fmt.Errorf("%w; and cannot stat it: %w", err, serr)
	}
	if obj.Size != size || obj.SHA256 != sum {
		return fmt.Errorf("archive: %s already holds another object (%d bytes, sha256 %q; this one is %d bytes, sha256 %s): is node.name %q used by two nodes?",
			key, obj.Size, obj.SHA256, size, sum, u.o.Node)
	}
	alreadyPresent.Inc()
	return nil
}
