package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// ackedFlushEvery is how often acknowledged lines reach the OS, so a harness
// that kills the server mid-run can read what was acknowledged so far.
const ackedFlushEvery = 100 * time.Millisecond

// ackedLog is the -acked file: one "<id> <sha256 hex>\n" line per measured
// 201 (format in doc.go). Safe for concurrent use. Lines sit in a buffer
// until the flusher writes them (every ackedFlushEvery) or Close, which also
// fsyncs.
type ackedLog struct {
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	err  error // first write error; Close returns it
	line [64 + 2]byte
	stop chan struct{}
	done chan struct{}
}

// openAcked opens path for appending (creating it) and starts the flusher.
func openAcked(path string) (*ackedLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot open the -acked file: %w", err)
	}
	a := &ackedLog{f: f, w: bufio.NewWriterSize(f, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go a.flushLoop()
	return a, nil
}

// add appends one line for an acknowledged event id and the body's hash.
func (a *ackedLog) add(id []byte, sum *[32]byte) {
	a.mu.Lock()
	line := &a.line // not on the stack: bufio may pass it to the file, so it would escape
	line[0] = ' '
	hex.Encode(line[1:65], sum[:])
	line[65] = '\n'
	a.w.Write(id)
	if _, err := a.w.Write(line[:]); err != nil && a.err == nil {
		a.err = err
	}
	a.mu.Unlock()
}

func (a *ackedLog) flushLoop() {
	defer close(a.done)
	t := time.NewTicker(ackedFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			a.flush()
		case <-a.stop:
			return
		}
	}
}

func (a *ackedLog) flush() {
	a.mu.Lock()
	if err := a.w.Flush(); err != nil && a.err == nil {
		a.err = err
	}
	a.mu.Unlock()
}

// Close stops the flusher, writes what is buffered, fsyncs and closes. It
// returns the first error any of that (or an earlier write) met.
func (a *ackedLog) Close() error {
	close(a.stop)
	<-a.done
	a.flush()
	err := a.err
	if serr := a.f.Sync(); err == nil {
		err = serr
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot write the -acked file: %w", err)
	}
	return nil
}

// answerID returns the event id of a 201 answer {"id": "..."}; ok is false
// when there is none usable in a line (empty, or holding spaces or
// newlines). The returned slice may alias body.
func answerID(body []byte) (id []byte, ok bool) {
	if id, ok = fastAnswerID(body); !ok {
		var v struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(body, &v) != nil {
			return nil, false
		}
		id = []byte(v.ID)
	}
	if len(id) == 0 || bytes.ContainsAny(id, " \t\r\n") {
		return nil, false
	}
	return id, true
}

// fastAnswerID reads {"id":"<plain>"...} (whitespace allowed) without
// decoding; anything else is left to encoding/json.
func fastAnswerID(b []byte) ([]byte, bool) {
	b = bytes.TrimLeft(b, " \t\r\n")
	rest, ok := bytes.CutPrefix(b, []byte(`{`))
	if !ok {
		return nil, false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if rest, ok = bytes.CutPrefix(rest, []byte(`"id"`)); !ok {
		return nil, false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if rest, ok = bytes.CutPrefix(rest, []byte(`:`)); !ok {
		return nil, false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if rest, ok = bytes.CutPrefix(rest, []byte(`"`)); !ok {
		return nil, false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return nil, false
	}
	return rest[:end], true
}
