package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/envelope"
)

// pack is one claim pack being filled or uploaded. buf, held and sealed
// belong to the store's mutex until sealed; then to the upload, which
// closes done after setting err.
type pack struct {
	owner  packOwner
	key    string
	buf    []byte
	held   int64         // room taken for the bodies in buf
	ids    []envelope.ID // the hooks whose bodies are in buf
	timer  *time.Timer
	sealed bool
	done   chan struct{}
	err    error
}

// newPackLocked opens a pack for owner in st, sealed by a timer after the
// store's pack_delay. The caller holds st.mu and one count of c.wg for the
// pack's upload.
func (c *Claims) newPackLocked(st *claimStore, owner packOwner) *pack {
	p := &pack{owner: owner, done: make(chan struct{})}
	p.timer = time.AfterFunc(st.packDelay, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		c.sealLocked(st, p)
	})
	st.open[owner] = p
	return p
}

// sealLocked closes p to new bodies and starts its upload. The caller
// holds st.mu.
func (c *Claims) sealLocked(st *claimStore, p *pack) {
	if p.sealed {
		return
	}
	p.sealed = true
	p.timer.Stop()
	// The key, and the time in it, is the seal's: every body in the pack
	// was received before it, which retention relies on (a pack is kept
	// while a hook received before its time is undelivered).
	p.key = st.layout.PackKey(p.owner.tenant, p.owner.source, c.o.Node, c.o.Now(), c.packN.Add(1))
	if st.open[p.owner] == p {
		delete(st.open, p.owner)
	}
	go c.upload(st, p)
}

// upload puts the pack with its SHA-256 (the backend checks it before the
// object exists, and a dir store syncs the file and its directory), then
// wakes its waiters and gives its room back.
func (c *Claims) upload(st *claimStore, p *pack) {
	defer c.wg.Done()
	sum := sha256.Sum256(p.buf)
	ctx, cancel := context.WithTimeout(context.Background(), c.o.UploadTimeout)
	start := time.Now()
	err := st.b.Put(ctx, p.key, bytes.NewReader(p.buf), int64(len(p.buf)), hex.EncodeToString(sum[:]))
	cancel()
	if err != nil {
		claimUploadFailures.Inc()
		c.o.Logger.Error("claims: cannot upload a claim pack; its deliveries are retried", zap.String("store", st.name),
			zap.String("key", p.key), zap.Int("bytes", len(p.buf)), zap.Error(err))
		p.err = fmt.Errorf("cannot upload claim pack %s to claims.stores.%s (%s): %w", p.key, st.name, st.b, err)
	} else {
		claimPacksUploaded.Inc()
		claimBytesUploaded.Add(len(p.buf))
		claimUploadSeconds.UpdateDuration(start)
	}
	p.buf = nil
	st.mu.Lock()
	for _, id := range p.ids {
		if st.inPack[id].p == p {
			delete(st.inPack, id)
		}
	}
	st.mu.Unlock()
	c.room.give(p.held)
	close(p.done)
}

// room bounds the bytes held in open and uploading packs: take waits for
// room (or ctx), give returns it. One body larger than the bound is let in
// alone.
type room struct {
	mu    sync.Mutex
	used  int64
	max   int64
	freed chan struct{} // closed and replaced by every give
}

func newRoom(max int64) *room { return &room{max: max, freed: make(chan struct{})} }

func (r *room) take(ctx context.Context, n int64) error {
	waited := false
	for {
		r.mu.Lock()
		if r.used == 0 || r.used+n <= r.max {
			r.used += n
			r.mu.Unlock()
			claimOpenBytes.Add(n)
			return nil
		}
		freed := r.freed
		r.mu.Unlock()
		if !waited {
			waited = true
			claimRoomWaits.Inc()
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *room) give(n int64) {
	if n == 0 {
		return
	}
	r.mu.Lock()
	r.used -= n
	if r.used < 0 {
		panic("BUG: archive: claim room given back twice")
	}
	close(r.freed)
	r.freed = make(chan struct{})
	r.mu.Unlock()
	claimOpenBytes.Add(-n)
}

// inUse is the bytes taken now (tests).
func (r *room) inUse() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.used
}
