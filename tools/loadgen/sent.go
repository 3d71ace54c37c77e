package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// sentLog is the -sent file: one line per measured open-loop request,
// answered or not (format in doc.go), so that a harness can join what the
// receiver behind the server saw to each request's scheduled send time.
// Safe for concurrent use; lines reach the OS when the buffer fills and at
// Close.
type sentLog struct {
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	err  error // first write error; Close returns it
	line []byte
}

// openSent creates (or truncates) path.
func openSent(path string) (*sentLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot open the -sent file: %w", err)
	}
	return &sentLog{f: f, w: bufio.NewWriterSize(f, 256<<10), line: make([]byte, 0, 128)}, nil
}

// add appends the line of one request: the body's sha256, its due time,
// when its exchange ended, and the answer's status (0: no answer).
func (s *sentLog) add(sum *[32]byte, due, done time.Time, status int) {
	s.mu.Lock()
	b := hex.AppendEncode(s.line[:0], sum[:])
	b = strconv.AppendInt(append(b, ' '), due.UnixNano(), 10)
	b = strconv.AppendInt(append(b, ' '), done.UnixNano(), 10)
	b = strconv.AppendInt(append(b, ' '), int64(status), 10)
	b = append(b, '\n')
	if _, err := s.w.Write(b); err != nil && s.err == nil {
		s.err = err
	}
	s.line = b
	s.mu.Unlock()
}

// Close writes what is buffered and closes the file. It returns the first
// error any of that (or an earlier write) met.
func (s *sentLog) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.err
	if ferr := s.w.Flush(); err == nil {
		err = ferr
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot write the -sent file: %w", err)
	}
	return nil
}
