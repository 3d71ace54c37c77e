package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/ankusa/ankusa/envelope"
)

// TestAnswerAfterWrite posts distinct bodies from many connections and
// checks that each body is in the log, framed, by the time its 201 comes,
// that every id is distinct, and that the batches shared fdatasyncs.
func TestAnswerAfterWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gcref.log")
	c, err := openCommitter(path)
	if err != nil {
		t.Fatal(err)
	}
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: c.handle}
	go srv.Serve(ln)
	defer func() { srv.Shutdown(); c.close() }()
	client := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}

	const workers, each = 16, 20
	var (
		mu  sync.Mutex
		ids = map[string]bool{}
		wg  sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				body := []byte(fmt.Sprintf(`{"worker":%d,"i":%d}`, w, i))
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				req.SetRequestURI("http://gcref/webhooks/demo")
				req.Header.SetMethod("POST")
				req.SetBody(body)
				err := client.Do(req, resp)
				status, answer := resp.StatusCode(), string(resp.Body())
				fasthttp.ReleaseRequest(req)
				fasthttp.ReleaseResponse(resp)
				if err != nil || status != fasthttp.StatusCreated {
					t.Errorf("POST: %v, status %d", err, status)
					return
				}
				log, err := os.ReadFile(path)
				if err != nil {
					t.Error(err)
					return
				}
				rec := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
				if !bytes.Contains(log, append(rec, body...)) {
					t.Errorf("answered 201 for %s before it was in the log", body)
				}
				id := answer[len(`{"id":"`) : len(answer)-len(`"}`)]
				if _, err := envelope.ParseID([]byte(id)); err != nil {
					t.Errorf("answer %q: %v", answer, err)
				}
				mu.Lock()
				if ids[id] {
					t.Errorf("id %s answered twice", id)
				}
				ids[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got := c.records.Load(); got != workers*each {
		t.Errorf("records = %d, want %d", got, workers*each)
	}
	if f := c.fsyncs.Load(); f == 0 || f > c.records.Load() {
		t.Errorf("fsyncs = %d for %d records", f, c.records.Load())
	}
}
