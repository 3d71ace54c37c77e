package wal

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/throttle"
	"github.com/ankusa/ankusa/internal/vfsutil"
)

// Recovery modes.
const (
	RecoverStrict   = "strict"
	RecoverTruncate = "truncate"
)

// Options configure a WAL.
type Options struct {
	// FS is the file system; vfs.Default on disk, a crashable MemFS in tests.
	FS  vfs.FS
	Dir string
	// MaxFileBytes rotates the active file before a batch would pass it.
	MaxFileBytes int64
	// MaxBatchBytes caps one commit's write; a record must fit in it.
	MaxBatchBytes int64
	// Node is the node ordinal inside event ids.
	Node uint16
	// Meta is the node's meta store: numbering resumes above every floor
	// it records and the WAL's tail (DESIGN.md §6 item 1), and every new
	// tenant ordinal is mirrored into it after the sync that made it
	// durable; Open mirrors the ordinals the log holds that it lacks (a
	// crash came between a sync and its mirror write). nil: nothing is
	// recorded outside the log.
	Meta Meta
	// MaxTenants caps ordinals (tenants.max; 0: no cap). Ordinals are never
	// reused, so every tenant ever created counts, erased ones too; the
	// hooks of a tenant past the cap are refused with ErrTenantLimit in
	// the loop that assigns ordinals, so no race can pass it.
	MaxTenants int
	// Recovery is RecoverStrict (default) or RecoverTruncate.
	Recovery string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnFatal is called once, from the loop, when a write or sync failed.
	OnFatal func(error)
	// OnDurable, if set, is called by the commit loop after each batch is
	// durable and before its waiters wake, with the batch's hook records
	// in seq order. It runs on the loop: it must not block. A callee that
	// keeps a request past the call must Retain it (and release it later);
	// the slice itself is reused after the call.
	OnDurable func(batch []*Request)
	// Logf reports recovery actions.
	Logf func(format string, args ...any)
}

// EnsureDefaults fills what was left out.
func (o *Options) EnsureDefaults() {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = 64 << 20
	}
	if o.MaxBatchBytes == 0 {
		o.MaxBatchBytes = 8 << 20
	}
	if o.Recovery == "" {
		o.Recovery = RecoverStrict
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OnFatal == nil {
		o.OnFatal = func(error) {}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// WAL is an open write-ahead log with its commit loop running.
type WAL struct {
	opts Options

	mu      sync.Mutex
	queue   []*Request
	spare   []*Request
	closed  bool
	signal  chan struct{}
	stopped chan struct{}

	failed    atomic.Bool
	noFile    atomic.Bool // the next file could not be allocated (space.go)
	lowSpace  atomic.Bool // SetLowSpace: the node holds storage.reserve_bytes back
	spaceLog  throttle.Throttle
	queued    atomic.Int64 // bytes queued, not yet taken by the loop
	num       *Numbers     // identity; its Next, Tenant and AddTenant are the loop's
	durMu     sync.Mutex
	durable   Position
	committed chan struct{} // signalled (never blocking) after each durable batch

	prepared chan preparedFile // a preparation's result (prepare.go); capacity 1
	closeErr error             // what Close returns if the log did not fail; set by the loop before it stops

	// Owned by the loop.
	file       vfs.File
	fileNum    uint64
	fileSize   int64
	batchNum   uint32 // number of the last batch written (per process run)
	iov        [][]byte
	tenBuf     []byte      // the records of the batch's new tenants
	newTenants []tenantRec // where each is in tenBuf
	scratch    []byte      // the batch, joined, for files without a descriptor

	// Owned by the loop too: the file prepared ahead of rotation.
	next      *preparedFile // ready for rotation to switch to
	preparing bool          // a preparation runs and will answer on prepared
	retry     *time.Timer   // a preparation that met ENOSPC runs again when it fires
	prepFails int           // preparations in a row that met ENOSPC
	dirDirty  bool          // a file was renamed into the log and the directory not synced since
	// lossAccepted: recovery cut acknowledged hooks (-wal-recovery=truncate),
	// so seqs above the log's end may be given again to new hooks.
	lossAccepted bool
}

// Request is one record on its way through the commit loop. Acquire it,
// append the payload to Buf (which starts with the frame header space), call
// SealPayload, then Commit. After Commit returns, Seq, ID and Ordinal hold
// what the loop assigned. Release it when done; Buf must not be kept.
type Request struct {
	Buf     []byte
	Seq     uint64
	ID      envelope.ID
	Ordinal uint32
	err     error
	done    chan struct{}
	refs    atomic.Int32
}

var requestPool = sync.Pool{New: func() any {
	return &Request{Buf: make([]byte, FrameHeaderSize, 4096), done: make(chan struct{}, 1)}
}}

// AcquireRequest returns an empty request from the pool.
func AcquireRequest() *Request {
	r := requestPool.Get().(*Request)
	r.Buf = r.Buf[:FrameHeaderSize]
	clear(r.Buf)
	r.refs.Store(1)
	return r
}

// Retain adds a holder to r: it goes back to the pool only when every
// holder has released it. The commit loop's OnDurable callee uses it to
// hand a committed record to dispatch without copying it.
func (r *Request) Retain() { r.refs.Add(1) }

// ReleaseRequest drops one holder of r and returns r to the pool when it
// was the last.
func ReleaseRequest(r *Request) {
	switch n := r.refs.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic("BUG: wal: request released more often than acquired and retained")
	}
	r.Seq, r.ID, r.Ordinal, r.err = 0, envelope.ID{}, 0, nil
	requestPool.Put(r)
}

// Open recovers the log in opts.Dir and starts the commit loop.
func Open(opts Options) (*WAL, error) {
	opts.EnsureDefaults()
	if err := vfsutil.MkdirAllSynced(opts.FS, opts.Dir); err != nil {
		return nil, fmt.Errorf("cannot create wal directory %q: %w", opts.Dir, err)
	}
	floor, err := ReadFloor(opts.Meta)
	if err != nil {
		return nil, fmt.Errorf("cannot read the numbering floor: %w", err)
	}
	bounds, err := readAckBounds(opts.Meta)
	if err != nil {
		return nil, fmt.Errorf("cannot read how far the log was acknowledged: %w", err)
	}
	st, err := recoverDir(opts, bounds)
	if err != nil {
		return nil, err
	}
	w := &WAL{
		opts:      opts,
		spaceLog:  throttle.Throttle{Every: 10 * time.Second},
		signal:    make(chan struct{}, 1),
		stopped:   make(chan struct{}),
		committed: make(chan struct{}, 1),
		prepared:  make(chan preparedFile, 1),
	}
	floor.raise(st.lastSeq, st.lastID)
	for name, ord := range st.tenants {
		if _, gone := floor.Erased[ord]; gone {
			// The log still holds the record of a tenant erased since:
			// its name is free (its next hook is a new tenant's) and its
			// ordinal is never given again (floor.Erased keeps it), so it
			// is neither mapped nor mirrored back.
			continue
		}
		if o, ok := floor.Tenants[name]; !ok || o != ord {
			if ok {
				floor.NextOrdinal = max(floor.NextOrdinal, o+1)
			}
			w.mirror(name, ord)
			floor.Tenants[name] = ord
		}
	}
	if st.lossAccepted && opts.Meta != nil {
		if err := spendBounds(opts.Meta, floor); err != nil {
			return nil, err
		}
	}
	w.lossAccepted = st.lossAccepted
	w.num = NewNumbers(opts.Node, floor, opts.MaxTenants)
	w.fileNum = st.lastFile + 1
	if err := w.createFile(); err != nil {
		return nil, err
	}
	w.durable = Position{File: w.fileNum, Size: w.fileSize, Seq: floor.Seq}
	setGauges(w)
	w.prepareNext()
	go w.loop()
	return w, nil
}

// mirror records a tenant ordinal in the meta store (not synced: the WAL's
// tenant record is the durable one, and Open mirrors it again if this
// write is lost).
func (w *WAL) mirror(name string, ord uint32) {
	if w.opts.Meta == nil {
		return
	}
	if err := w.opts.Meta.SetTenant(name, ord); err != nil {
		w.opts.Logf("cannot mirror the ordinal %d of tenant %q into the meta store: %v", ord, name, err)
	}
}

// Commit queues r and waits until it is durable (nil) or cannot be (error).
func (w *WAL) Commit(r *Request) error {
	if int64(len(r.Buf)) > w.opts.MaxBatchBytes {
		return ErrTooLarge
	}
	if w.failed.Load() {
		return ErrFatal
	}
	if w.refuseNoSpace() {
		return ErrNoSpace
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.queue = append(w.queue, r)
	w.queued.Add(int64(len(r.Buf)))
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
	<-r.done
	return r.err
}

// Close stops taking commits, commits everything queued, closes the
// active file, removes the file prepared ahead of rotation and records the
// numbering floor in Meta (a synced write). It returns
// ErrFatal if the log failed, or why the prepared file could not be
// removed (the log itself is whole then, and the next Open removes it).
func (w *WAL) Close() error {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if !already {
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
	<-w.stopped
	if w.failed.Load() {
		return ErrFatal
	}
	if w.closeErr != nil || already || w.opts.Meta == nil {
		return w.closeErr
	}
	// The clean-close record: a numbering floor for the next Open, even
	// once every file of the log is sealed and deleted (DESIGN.md §6 item 1).
	if err := w.opts.Meta.SetWALCheckpoint(w.LastSeq(), w.LastID()); err != nil {
		return fmt.Errorf("cannot record the wal checkpoint: %w", err)
	}
	// And how far the log was acknowledged, which recovery holds damage
	// against (DESIGN.md §6 item 10). A separate record: wal.type: none
	// reserves checkpoints ahead of hooks no log holds.
	if err := w.opts.Meta.SetWALClosed(w.LastSeq()); err != nil {
		return fmt.Errorf("cannot record the wal's clean close: %w", err)
	}
	return nil
}

// LastSeq is the seq of the last durable hook.
func (w *WAL) LastSeq() uint64 { return w.num.LastSeq() }

// LastID is the event id of the last durable hook.
func (w *WAL) LastID() envelope.ID { return w.num.LastID() }

// QueuedBytes is what waits for the loop.
func (w *WAL) QueuedBytes() int64 { return w.queued.Load() }

// LossAccepted reports whether this Open's recovery cut acknowledged
// hooks (-wal-recovery=truncate accepted a loss). Their seqs are given
// again to new hooks, and delivery rows written for the lost ones (unsynced,
// past the dispatch checkpoint) may still be in the meta store under the
// same keys.
func (w *WAL) LossAccepted() bool { return w.lossAccepted }

// Failed reports whether a write or sync has failed.
func (w *WAL) Failed() bool { return w.failed.Load() }

// Ordinal returns a tenant's ordinal, if it has one.
func (w *WAL) Ordinal(tenant string) (uint32, bool) { return w.num.Ordinal(tenant) }

// TenantCount is the number of ordinals ever given, erased tenants' too.
func (w *WAL) TenantCount() int { return w.num.TenantCount() }

// ForgetTenant makes name stop naming ordinal ord, if it still does: the
// tenant's erase calls it, and the next hook of name is a new tenant's,
// with a new ordinal, its own tenant record and mirror record. ord is
// never given again. The meta store's mirror record of the old ordinal is
// the erase's to delete (meta.Store.FinishErase); the log's record of it
// is not mapped back at the next Open once the tombstone names ord.
func (w *WAL) ForgetTenant(name string, ord uint32) { w.num.ForgetTenant(name, ord) }

// TenantsFull reports whether a new tenant would be refused (tenants.max).
func (w *WAL) TenantsFull() bool { return w.num.Full() }

func (w *WAL) loop() {
	defer close(w.stopped)
	for {
		select {
		case <-w.signal:
		case p := <-w.prepared:
			if err := w.receive(p); err != nil {
				w.fail(nil, err)
			}
		case <-w.retryC():
			w.retryPrepare()
		}
		for {
			w.pollPrepared()
			batch, more, closed := w.take()
			if len(batch) > 0 {
				w.commitBatch(batch)
			}
			if closed && !more {
				w.finish()
				return
			}
			if !more {
				break
			}
		}
	}
}

// take removes up to MaxBatchBytes of queued requests.
func (w *WAL) take() (batch []*Request, more, closed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int64
	i := 0
	for ; i < len(w.queue); i++ {
		sz := int64(len(w.queue[i].Buf))
		if i > 0 && n+sz > w.opts.MaxBatchBytes {
			break
		}
		n += sz
	}
	w.queued.Add(-n)
	batch = append(w.spare[:0], w.queue[:i]...)
	rest := copy(w.queue, w.queue[i:])
	clear(w.queue[rest:])
	w.queue = w.queue[:rest]
	w.spare = nil
	return batch, rest > 0, w.closed
}

func (w *WAL) commitBatch(batch []*Request) {
	defer func() {
		w.spare = batch[:0]
	}()
	if w.failed.Load() {
		w.answer(batch, ErrFatal)
		return
	}
	if w.NoSpace() {
		noSpaceRefusals.Add(len(batch))
		w.answer(batch, ErrNoSpace)
		return
	}
	if batch = w.number(batch); len(batch) == 0 {
		return
	}
	size := w.gather(batch)
	rotated, syncTime, err := w.write(size)
	if errors.Is(err, ErrNoSpace) {
		w.unnumber(batch)
		noSpaceRefusals.Add(len(batch))
		w.answer(batch, ErrNoSpace)
		if rotated {
			w.prepareNext()
		}
		return
	}
	if err != nil {
		w.fail(batch, err)
		return
	}
	observeCommit(len(batch), size, syncTime)
	last := batch[len(batch)-1]
	w.num.Publish(last.Seq, last.ID)
	for _, t := range w.newTenants {
		w.mirror(t.name, t.ord)
	}
	// Readers of the log (the sealer) may now read up to here; the tenant
	// mirror heard of every ordinal they can meet.
	w.durMu.Lock()
	w.durable = Position{File: w.fileNum, Size: w.fileSize, Seq: last.Seq}
	w.durMu.Unlock()
	if w.opts.OnDurable != nil {
		w.opts.OnDurable(batch)
	}
	select {
	case w.committed <- struct{}{}:
	default:
	}
	w.answer(batch, nil)
	if rotated {
		// After the answer: the preparation's fsync does not compete with
		// this batch's syncs.
		w.prepareNext()
	}
}

// number gives each hook of the next batch its seq, event id and tenant
// ordinal, seals its frame header, and puts the record of each new tenant
// in tenBuf. A hook whose tenant would need an ordinal past MaxTenants is
// answered ErrTenantLimit here, in the loop that assigns ordinals, so no
// race can pass the cap; it returns the others, in order, in batch's own
// array. The batch number moves on only when something is written: recovery
// tells a torn tail by consecutive batch numbers.
func (w *WAL) number(batch []*Request) []*Request {
	num := w.batchNum + 1
	nowMs := uint64(w.opts.Now().UnixMilli())
	w.tenBuf, w.newTenants = w.tenBuf[:0], w.newTenants[:0]
	kept := batch[:0]
	for _, r := range batch {
		payload := r.Buf[FrameHeaderSize:]
		name, ok := tenantOf(payload)
		if !ok {
			panic("BUG: wal: commit of a record without a tenant")
		}
		ord, isNew, err := w.num.Tenant(name)
		if err != nil {
			tenantLimited.Inc()
			r.err = err
			r.done <- struct{}{}
			continue
		}
		if isNew {
			off := len(w.tenBuf)
			w.tenBuf = appendTenantRecord(w.tenBuf, ord, name, num)
			w.newTenants = append(w.newTenants, tenantRec{name: string(name), ord: ord, off: off, end: len(w.tenBuf)})
			w.num.AddTenant(string(name), ord)
		}
		seq, id := w.num.Next(nowMs)
		envelope.PutIdentity(payload, seq, id, ord)
		sealHeader(r.Buf, num)
		r.Seq, r.ID, r.Ordinal = seq, id, ord
		kept = append(kept, r)
	}
	if len(kept) > 0 {
		w.batchNum = num
	}
	return kept
}

// gather lists the batch's buffers for one writev and returns their size.
// Tenant records go before the batch's hooks: recovery must meet a
// tenant's record before its first hook. tenBuf is final now, so its
// slices are stable.
func (w *WAL) gather(batch []*Request) int64 {
	w.iov = w.iov[:0]
	for _, t := range w.newTenants {
		w.iov = append(w.iov, w.tenBuf[t.off:t.end])
	}
	size := int64(len(w.tenBuf))
	for _, r := range batch {
		w.iov = append(w.iov, r.Buf)
		size += int64(len(r.Buf))
	}
	return size
}

// write writes the gathered batch, rotating first if it would take the
// active file past MaxFileBytes, and makes it durable. An error wrapping
// ErrNoSpace left the log as it was before the batch (space.go); rotated
// then says a new file became active all the same.
func (w *WAL) write(size int64) (rotated bool, syncTime time.Duration, err error) {
	if w.fileSize > fileHeaderSize && w.fileSize+size > w.opts.MaxFileBytes {
		if err := w.rotate(); err != nil {
			return false, 0, err
		}
		rotated, w.dirDirty = true, true
	}
	if err := writeAll(w.file, w.iov, &w.scratch); err != nil {
		return rotated, 0, w.writeFailed(err)
	}
	w.fileSize += size
	syncStart := time.Now()
	if err := w.file.SyncData(); err != nil {
		return rotated, 0, fmt.Errorf("cannot fdatasync wal file %s: %w", FileName(w.fileNum), err)
	}
	syncTime = time.Since(syncStart)
	if w.dirDirty {
		// The new file's name is durable only once the directory is
		// synced: a crash before that could lose the file, and this batch
		// with it. (install says why this comes after the fdatasync.)
		if err := vfsutil.SyncDir(w.opts.FS, w.opts.Dir); err != nil {
			return rotated, 0, fmt.Errorf("cannot add wal file %s to the log: %w", FileName(w.fileNum), err)
		}
		w.dirDirty = false
	}
	return rotated, syncTime, nil
}

// Position is how far the log is durable: every byte of files before File,
// and Size bytes of File; Seq is the last hook in them.
type Position struct {
	File uint64
	Size int64
	Seq  uint64
}

// Durable is the durable end of the log.
func (w *WAL) Durable() Position {
	w.durMu.Lock()
	defer w.durMu.Unlock()
	return w.durable
}

// Committed is signalled after each batch becomes durable (at most one
// signal waits: a reader drains everything up to Durable when it wakes).
func (w *WAL) Committed() <-chan struct{} { return w.committed }

// Dir is the log's directory; FS its file system.
func (w *WAL) Dir() string { return w.opts.Dir }
func (w *WAL) FS() vfs.FS  { return w.opts.FS }

type tenantRec struct {
	name     string
	ord      uint32
	off, end int
}

func (w *WAL) answer(batch []*Request, err error) {
	for _, r := range batch {
		r.err = err
		r.done <- struct{}{}
	}
}

// fail makes the node's WAL unusable: this batch and everything after it is
// refused, and OnFatal is told once.
func (w *WAL) fail(batch []*Request, err error) {
	first := !w.failed.Swap(true)
	w.answer(batch, ErrFatal)
	if first {
		fatalTotal.Inc()
		w.opts.OnFatal(err)
	}
}

func (w *WAL) finish() {
	if w.file != nil {
		if !w.failed.Load() {
			if err := w.file.SyncData(); err != nil {
				w.failed.Store(true)
				fatalTotal.Inc()
				w.opts.OnFatal(fmt.Errorf("cannot fdatasync wal file %s at close: %w", FileName(w.fileNum), err))
			}
		}
		_ = w.file.Close()
		w.file = nil
	}
	w.closeErr = w.dropPrepared()
}

// rotate switches to the prepared file, waiting for it if its preparation
// still runs. Rotation happens between batches: every batch of the old
// file is synced, so a later file is never followed by a torn one.
func (w *WAL) rotate() error {
	p, err := w.nextFile()
	if err != nil {
		return err
	}
	if err := w.install(p); err != nil {
		return err
	}
	rotationsTotal.Inc()
	return nil
}

// createFile creates file w.fileNum with its header, syncs it and the
// directory, so a later fdatasync of appended data is enough. Open uses
// it for the first file of a run, under its final name; rotation uses
// files prepared ahead (prepare.go).
func (w *WAL) createFile() error {
	path := w.opts.FS.PathJoin(w.opts.Dir, FileName(w.fileNum))
	f, err := w.opts.FS.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("cannot create wal file %q: %w", path, err)
	}
	if _, err := f.Write(appendFileHeader(nil)); err != nil {
		f.Close()
		return fmt.Errorf("cannot write wal file %q: %w", path, err)
	}
	if err := preallocate(f, w.opts.MaxFileBytes); IsNoSpace(err) {
		// A boot on a nearly full disk serves: this file's writes may
		// meet ENOSPC, which refuses their batches (space.go).
		enospcTotal.Inc()
		w.opts.Logf("wal: cannot allocate %d bytes (wal.max_file_bytes) for wal file %q, the disk is full; its commits may be refused until space returns: %v", w.opts.MaxFileBytes, path, err)
	} else if err != nil {
		f.Close()
		return fmt.Errorf("cannot allocate %d bytes (wal.max_file_bytes) for wal file %q: %w", w.opts.MaxFileBytes, path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("cannot fsync wal file %q: %w", path, err)
	}
	if err := vfsutil.SyncDir(w.opts.FS, w.opts.Dir); err != nil {
		f.Close()
		return err
	}
	w.file, w.fileSize = f, fileHeaderSize
	return nil
}

var errShortWrite = errors.New("short write")
