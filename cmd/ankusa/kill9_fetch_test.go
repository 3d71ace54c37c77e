package main

// Fetching every acknowledged hook back through the running node's admin
// API, as an operator would: GET /v1/tenants/{tenant}/hooks/{id}.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/ankusa/ankusa/envelope"
)

// fetchVerdict counts the answers to the fetches: all but fetched must be 0.
type fetchVerdict struct {
	fetched, lost, mismatched, errors int
	base64                            int // fetched with body_encoding base64
	problems                          []string
}

func (v *fetchVerdict) problem(format string, args ...any) {
	if len(v.problems) < 10 {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	}
}

func (v *fetchVerdict) add(o fetchVerdict) {
	v.fetched += o.fetched
	v.lost += o.lost
	v.mismatched += o.mismatched
	v.errors += o.errors
	v.base64 += o.base64
	for _, p := range o.problems {
		v.problem("%s", p)
	}
}

// body decodes the body of the hook's JSON form (admin_hooks_test.go) per
// body_encoding.
func (h *hookJSON) body() ([]byte, error) {
	switch h.BodyEncoding {
	case envelope.BodyUTF8:
		return []byte(h.Body), nil
	case envelope.BodyBase64:
		return base64.StdEncoding.DecodeString(h.Body)
	}
	return nil, fmt.Errorf("body_encoding %q is neither utf8 nor base64", h.BodyEncoding)
}

// fetchAcked fetches every acknowledged hook from the admin listener at addr
// with workers concurrent keep-alive connections, and compares each body
// with the hash loadgen recorded. tenantOf names the tenant a hook was sent
// to (loadgen's -acked file does not); an id without one counts as lost.
func fetchAcked(addr, token string, acks []acked, tenantOf func(envelope.ID) (string, bool), workers int) fetchVerdict {
	tr := &http.Transport{MaxIdleConns: workers, MaxIdleConnsPerHost: workers, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	jobs := make(chan *acked)
	var (
		mu  sync.Mutex
		all fetchVerdict
		wg  sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			var v fetchVerdict
			var buf []byte
			for a := range jobs {
				buf = fetchOne(client, addr, token, a, tenantOf, &v, buf)
			}
			mu.Lock()
			all.add(v)
			mu.Unlock()
		})
	}
	for i := range acks {
		jobs <- &acks[i]
	}
	close(jobs)
	wg.Wait()
	return all
}

// fetchOne fetches one hook, counts the answer in v and returns buf, the
// reused response buffer.
func fetchOne(client *http.Client, addr, token string, a *acked, tenantOf func(envelope.ID) (string, bool), v *fetchVerdict, buf []byte) []byte {
	tenant, ok := tenantOf(a.id)
	if !ok {
		v.lost++
		v.problem("%s (%s:%d): no tenant to fetch it from: it is not in the WAL", a.id, a.file, a.line)
		return buf
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/tenants/"+tenant+"/hooks/"+a.id.String(), nil)
	if err != nil {
		v.errors++
		v.problem("%s: %v", a.id, err)
		return buf
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		v.errors++
		v.problem("GET %s: %v", req.URL.Path, err)
		return buf
	}
	buf, err = readAll(resp.Body, buf[:0])
	resp.Body.Close()
	switch {
	case err != nil:
		v.errors++
		v.problem("GET %s: %d, cannot read the answer: %v", req.URL.Path, resp.StatusCode, err)
		return buf
	case resp.StatusCode == http.StatusNotFound:
		v.lost++
		v.problem("GET %s: 404 %s: acknowledged (%s:%d) and not fetchable", req.URL.Path, buf, a.file, a.line)
		return buf
	case resp.StatusCode != http.StatusOK:
		v.errors++
		v.problem("GET %s: %d %s", req.URL.Path, resp.StatusCode, buf)
		return buf
	}
	var h hookJSON
	if err := json.Unmarshal(buf, &h); err != nil {
		v.errors++
		v.problem("GET %s: 200 and not the hook's JSON form: %v", req.URL.Path, err)
		return buf
	}
	body, err := h.body()
	switch {
	case err != nil:
		v.errors++
		v.problem("GET %s: %v", req.URL.Path, err)
	case h.ID != a.id.String() || h.TenantID != tenant:
		v.mismatched++
		v.problem("GET %s: answered hook %s of tenant %q", req.URL.Path, h.ID, h.TenantID)
	case sha256.Sum256(body) != a.hash:
		v.mismatched++
		v.problem("GET %s: the body (%s, %d bytes) hashes to %x, loadgen sent %x", req.URL.Path, h.BodyEncoding, len(body), sha256.Sum256(body), a.hash)
	default:
		v.fetched++
		if h.BodyEncoding == envelope.BodyBase64 {
			v.base64++
		}
	}
	return buf
}

// readAll is io.ReadAll into a reused buffer.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
