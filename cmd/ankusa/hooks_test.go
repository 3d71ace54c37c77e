package main

// Senders of hooks and a reader of the WAL they end up in.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/wal"
)

// ack is a hook the appliance answered 201 for: it promised it is durable.
type ack struct {
	id     string
	tenant string
	source string
	body   []byte
	at     time.Time // when the 201 arrived
}

// target is a URL the senders post to.
type target struct {
	tenant, source string
	// want404: the source belongs to another tenant; nothing may be stored.
	want404 bool
}

// targets mix tenants of the shared source, the tenant-owned source, and
// the owned source under a tenant it does not belong to.
var targets = []target{
	{tenant: "t0", source: "open"}, {tenant: "t1", source: "open"},
	{tenant: "t2", source: "open"}, {tenant: "t3", source: "open"},
	{tenant: "t4.eu", source: "open"}, {tenant: "t5_x", source: "open"},
	{tenant: "acme", source: "open"},
	{tenant: "acme", source: "acme-billing"}, {tenant: "acme", source: "acme-billing"},
	{tenant: "globex", source: "acme-billing", want404: true},
}

// load runs concurrent senders against a node until stopped. Every sender
// has its own keep-alive connection.
type load struct {
	t        *testing.T
	base     string
	stopCh   chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	acks     []ack
	bad      []string // answers the appliance must not give
	sent     atomic.Int64
	netErrs  atomic.Int64
	notFound atomic.Int64
}

// startLoad starts senders posting bodies of 0..maxBody random bytes.
func startLoad(t *testing.T, listen string, senders, maxBody int) *load {
	l := &load{t: t, base: "http://" + listen + "/webhooks/", stopCh: make(chan struct{})}
	for i := range senders {
		l.wg.Add(1)
		go l.sender(uint64(i), maxBody)
	}
	return l
}

func (l *load) sender(seed uint64, maxBody int) {
	defer l.wg.Done()
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	client := &http.Client{
		Timeout:   15 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true},
	}
	defer client.CloseIdleConnections()
	for {
		select {
		case <-l.stopCh:
			return
		default:
		}
		tg := targets[rng.IntN(len(targets))]
		body := randomBody(rng, maxBody)
		l.sent.Add(1)
		a, status, answer, err := post(client, l.base+tg.tenant+"/"+tg.source, body)
		switch {
		case err != nil:
			// The node is down (killed, restarting) or went away mid-answer:
			// not acknowledged, so nothing was promised.
			l.netErrs.Add(1)
			time.Sleep(2 * time.Millisecond)
		case tg.want404 && status == http.StatusNotFound:
			l.notFound.Add(1)
		case !tg.want404 && status == http.StatusCreated && a.id != "":
			a.tenant, a.source, a.body = tg.tenant, tg.source, body
			l.mu.Lock()
			l.acks = append(l.acks, a)
			l.mu.Unlock()
		default:
			l.mu.Lock()
			l.bad = append(l.bad, fmt.Sprintf("POST /webhooks/%s/%s: %d %s", tg.tenant, tg.source, status, answer))
			l.mu.Unlock()
		}
	}
}

// randomBody is sometimes empty, sometimes JSON text, mostly random bytes.
func randomBody(rng *rand.Rand, maxBody int) []byte {
	switch rng.IntN(10) {
	case 0:
		return []byte{}
	case 1, 2:
		return fmt.Appendf(nil, `{"id":"evt_%d","type":"invoice.paid","pad":%q}`, rng.Uint64(), strings.Repeat("x", rng.IntN(maxBody/2)))
	}
	b := make([]byte, rng.IntN(maxBody+1))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// post sends one hook. err is set when no whole answer arrived.
func post(client *http.Client, url string, body []byte) (a ack, status int, answer string, err error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return a, 0, "", err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := client.Do(req)
	if err != nil {
		return a, 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return a, 0, "", err
	}
	if resp.StatusCode == http.StatusCreated {
		var v struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &v); err != nil || len(v.ID) != envelope.IDTextLen || !strings.HasPrefix(v.ID, "evt_") {
			return a, resp.StatusCode, string(b), nil // reported as a bad answer
		}
		a.id, a.at = v.ID, time.Now()
	}
	return a, resp.StatusCode, string(b), nil
}

// stop stops the senders and returns what was acknowledged.
func (l *load) stop() []ack {
	close(l.stopCh)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bad) > 0 {
		n := min(len(l.bad), 10)
		l.t.Errorf("%d answers the appliance must not give, first %d:\n%s", len(l.bad), n, strings.Join(l.bad[:n], "\n"))
	}
	return append([]ack(nil), l.acks...)
}

func (l *load) ackCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// hook is one envelope record read back from the WAL.
type hook struct {
	env    envelope.Envelope
	file   string
	offset int64
}

// walContents is the log of a stopped node: the hooks of its sealed
// segments and of the WAL files still on disk, in seq order.
type walContents struct {
	hooks   []hook
	tenants map[string]uint32 // name -> ordinal
	// walHooks and walTenants are what the WAL files alone hold (what
	// `ankusa inspect wal` lists).
	walHooks   []hook
	walTenants int
}

// readWAL reads the log of the node whose WAL is in dir: every sealed
// segment beside it (WAL files go once their hooks are sealed and their
// delivery rows durable), then every WAL record, and checks what holds for
// any log: one ordinal per tenant, its tenant record (where the WAL still
// has it) before its first hook there, the same hook wherever it is twice.
func readWAL(t *testing.T, dir string) walContents {
	t.Helper()
	c := walContents{tenants: map[string]uint32{}}
	bySeq := map[uint64]hook{}
	ordinals := map[uint32]string{}
	// tenant records seen, and tenants whose records the WAL may no longer
	// hold (their first hook came from a segment or a later WAL file).
	seenRecord := map[string]bool{}
	add := func(h hook) error {
		if prev, dup := bySeq[h.env.Seq]; dup {
			if prev.env.ID != h.env.ID || !bytes.Equal(prev.env.Body, h.env.Body) {
				return fmt.Errorf("seq %d is %s in %s and %s in %s", h.env.Seq, prev.env.ID, prev.file, h.env.ID, h.file)
			}
			return nil
		}
		if ord, ok := c.tenants[h.env.TenantID]; ok && ord != h.env.TenantOrdinal {
			return fmt.Errorf("%s offset %d: hook seq %d of tenant %q carries ordinal %d, the tenant has %d", h.file, h.offset, h.env.Seq, h.env.TenantID, h.env.TenantOrdinal, ord)
		}
		if other, ok := ordinals[h.env.TenantOrdinal]; ok && other != h.env.TenantID {
			return fmt.Errorf("%s offset %d: ordinal %d carried by %q and %q", h.file, h.offset, h.env.TenantOrdinal, other, h.env.TenantID)
		}
		c.tenants[h.env.TenantID], ordinals[h.env.TenantOrdinal] = h.env.TenantOrdinal, h.env.TenantID
		bySeq[h.env.Seq] = h
		return nil
	}
	if err := readSegments(filepath.Join(filepath.Dir(dir), "segments"), add); err != nil {
		t.Fatalf("cannot read the segments beside %s: %v", dir, err)
	}
	firstFile := true
	walStartsAtOne := false
	err := wal.ReadDir(vfs.Default, dir, func(r *wal.Record) error {
		if firstFile {
			walStartsAtOne, firstFile = strings.HasSuffix(r.File, wal.FileName(1)), false
		}
		if r.Kind == envelope.KindTenant {
			name := string(r.TenantName())
			if seenRecord[name] {
				return fmt.Errorf("%s offset %d: second tenant record for %q", r.File, r.Offset, name)
			}
			if prev, ok := c.tenants[name]; ok && prev != r.Ordinal {
				return fmt.Errorf("%s offset %d: tenant record gives %q ordinal %d, its hooks carry %d", r.File, r.Offset, name, r.Ordinal, prev)
			}
			if other, dup := ordinals[r.Ordinal]; dup && other != name {
				return fmt.Errorf("%s offset %d: ordinal %d given to %q and %q", r.File, r.Offset, r.Ordinal, other, name)
			}
			seenRecord[name] = true
			c.walTenants++
			c.tenants[name], ordinals[r.Ordinal] = r.Ordinal, name
			return nil
		}
		var h hook
		if _, err := envelope.Decode(r.Payload, &h.env); err != nil {
			return fmt.Errorf("%s offset %d: %w", r.File, r.Offset, err)
		}
		if h.env.Seq != r.Seq || h.env.ID != r.ID {
			return fmt.Errorf("%s offset %d: frame says seq %d id %s, envelope says %d %s", r.File, r.Offset, r.Seq, r.ID, h.env.Seq, h.env.ID)
		}
		if _, known := c.tenants[h.env.TenantID]; walStartsAtOne && !known && !seenRecord[h.env.TenantID] {
			return fmt.Errorf("%s offset %d: hook seq %d of tenant %q comes before its tenant record", r.File, r.Offset, h.env.Seq, h.env.TenantID)
		}
		h.file, h.offset = r.File, r.Offset
		c.walHooks = append(c.walHooks, h)
		return add(h)
	})
	if err != nil {
		t.Fatalf("cannot read the WAL in %s: %v", dir, err)
	}
	for _, h := range bySeq {
		c.hooks = append(c.hooks, h)
	}
	sort.Slice(c.hooks, func(i, j int) bool { return c.hooks[i].env.Seq < c.hooks[j].env.Seq })
	return c
}

// readSegments passes every hook of every sealed segment in dir to fn.
func readSegments(dir string, fn func(hook) error) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		return err
	}
	dec := segment.NewDecoder()
	defer dec.Close()
	for _, path := range names {
		f, err := segment.OpenFile(vfs.Default, path)
		if err != nil {
			return err
		}
		for i := range f.Index {
			raw, err := f.ReadBlock(i, dec, nil)
			if err != nil {
				f.Close()
				return err
			}
			err = segment.Records(raw, func(p []byte) error {
				var h hook
				if _, err := envelope.Decode(p, &h.env); err != nil {
					return fmt.Errorf("%s block %d: %w", path, i, err)
				}
				h.file = path
				return fn(h)
			})
			if err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
	}
	return nil
}

// checkNumbering requires seqs dense from 1 and ids strictly increasing.
func checkNumbering(t *testing.T, hooks []hook) {
	t.Helper()
	for i, h := range hooks {
		if h.env.Seq != uint64(i+1) {
			t.Fatalf("hook %d (%s offset %d) has seq %d, want %d: seqs must be dense", i, h.file, h.offset, h.env.Seq, i+1)
		}
		if i > 0 && bytes.Compare(h.env.ID[:], hooks[i-1].env.ID[:]) <= 0 {
			t.Fatalf("seq %d has id %s, not above seq %d's %s: ids must increase", h.env.Seq, h.env.ID, hooks[i-1].env.Seq, hooks[i-1].env.ID)
		}
	}
}

// checkAcked requires every acknowledged hook in the WAL exactly once, with
// the body, tenant and source it was sent with.
func checkAcked(t *testing.T, acks []ack, hooks []hook) {
	t.Helper()
	byID := make(map[string][]*hook, len(hooks))
	for i := range hooks {
		id := hooks[i].env.ID.String()
		byID[id] = append(byID[id], &hooks[i])
	}
	lost := 0
	for _, a := range acks {
		hs := byID[a.id]
		switch {
		case len(hs) == 0:
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged hook %s (tenant %s, source %s, %d bytes, 201 at %s) is not in the WAL",
					a.id, a.tenant, a.source, len(a.body), a.at.Format("15:04:05.000000"))
			}
		case len(hs) > 1:
			t.Errorf("acknowledged hook %s is in the WAL %d times", a.id, len(hs))
		default:
			e := &hs[0].env
			if e.TenantID != a.tenant || e.SourceID != a.source {
				t.Errorf("hook %s: stored under tenant %q source %q, sent to %q/%q", a.id, e.TenantID, e.SourceID, a.tenant, a.source)
			}
			if !bytes.Equal(e.Body, a.body) {
				t.Errorf("hook %s: stored body (%d bytes) differs from the one sent (%d bytes)", a.id, len(e.Body), len(a.body))
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged hooks are lost", lost, len(acks))
	}
}

// checkBinding requires that the tenant-owned source stored nothing under
// another tenant.
func checkBinding(t *testing.T, hooks []hook) {
	t.Helper()
	for _, h := range hooks {
		if h.env.SourceID == "acme-billing" && h.env.TenantID != "acme" {
			t.Fatalf("seq %d: source acme-billing (owned by acme) stored a hook under tenant %q", h.env.Seq, h.env.TenantID)
		}
		if h.env.TenantID == "globex" {
			t.Fatalf("seq %d: a hook was stored under tenant globex, which only ever got 404s", h.env.Seq)
		}
	}
}

// checkInspect requires `ankusa inspect wal` to list the same records.
func checkInspect(t *testing.T, dir string, c walContents) {
	t.Helper()
	code, stdout, stderr := runBin(t, t.TempDir(), "inspect", "wal", dir)
	if code != 0 {
		t.Fatalf("ankusa inspect wal %s: exit %d\n%s", dir, code, stderr)
	}
	var hooks, tenants int
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "seq="):
			if hooks < len(c.walHooks) {
				h := c.walHooks[hooks].env
				want := fmt.Sprintf("seq=%d\tid=%s\ttenant=%s\tsource=%s\tsize=%d\t", h.Seq, h.ID, h.TenantID, h.SourceID, len(h.Body))
				if !strings.HasPrefix(line, want) {
					t.Fatalf("ankusa inspect wal line %q, want it to start %q", line, want)
				}
			}
			hooks++
		case strings.HasPrefix(line, "tenant\t"):
			tenants++
		case line == "" && len(c.walHooks) == 0 && c.walTenants == 0:
		default:
			t.Fatalf("ankusa inspect wal: unexpected line %q", line)
		}
	}
	if hooks != len(c.walHooks) || tenants != c.walTenants {
		t.Fatalf("ankusa inspect wal lists %d hooks and %d tenants; the WAL has %d and %d", hooks, tenants, len(c.walHooks), c.walTenants)
	}
}

// postOne sends one hook and requires a 201.
func postOne(t *testing.T, listen, tenant, source string, body []byte) ack {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	a, status, answer, err := post(client, "http://"+listen+"/webhooks/"+tenant+"/"+source, body)
	if err != nil || status != http.StatusCreated || a.id == "" {
		t.Fatalf("POST /webhooks/%s/%s: %d %s %v, want 201 with an id", tenant, source, status, answer, err)
	}
	a.tenant, a.source, a.body = tenant, source, body
	return a
}
