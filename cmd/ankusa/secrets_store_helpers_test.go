package main

// Helpers of the secrets-at-rest tests (secrets_store_test.go): KEK files,
// a node on either writable store with secrets: set, a search for a
// secret's every plain encoding through files and a Redis namespace, and
// direct reads and edits of stored source records (meta store and Redis).

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ankusa/ankusa/internal/redistest"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/secrets"
)

// secKey is a 256-bit KEK of its own for each label.
func secKey(label string) []byte {
	sum := sha256.Sum256([]byte("ankusa-test-kek/" + label))
	return sum[:]
}

// secKEKRef writes key in hex to a file of dir and returns the file:
// reference secrets.kek takes.
func secKEKRef(t *testing.T, dir, label string, key []byte) string {
	t.Helper()
	path := filepath.Join(dir, "kek-"+label+".hex")
	if err := os.WriteFile(path, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "file:" + path
}

// secSecretsYAML is the secrets: block of kek and kek_previous (each a
// reference, "" to leave it out), "" when both are.
func secSecretsYAML(kek, previous string) string {
	var parts []string
	if kek != "" {
		parts = append(parts, fmt.Sprintf("kek: %q", kek))
	}
	if previous != "" {
		parts = append(parts, fmt.Sprintf("kek_previous: %q", previous))
	}
	if len(parts) == 0 {
		return ""
	}
	return "secrets: {" + strings.Join(parts, ", ") + "}"
}

// secStore is the source_store under test: persistent, or redis on a
// namespace of the test's own on the shared server.
type secStore struct {
	kind string // "persistent" or "redis"
	url  string
	ns   string
}

func secStoreOf(t *testing.T, kind string) secStore {
	t.Helper()
	if kind != "redis" {
		return secStore{kind: kind}
	}
	u := redistest.URL(t)
	return secStore{kind: kind, url: u, ns: redistest.Namespace(t, u)}
}

// yaml is the store's source_store body for srcAPIYAML's {type: %s}.
func (s secStore) yaml() string {
	if s.kind != "redis" {
		return s.kind
	}
	return fmt.Sprintf("redis, url: %q, namespace: %q, tick_ms: 200", s.url, s.ns)
}

// secNode is an apiNode on store whose secrets: block is kek and previous
// (references, "" for none).
func secNode(t *testing.T, store secStore, kek, previous string) *apiNode {
	t.Helper()
	return newAPINode(t, store.yaml(), secSecretsYAML(kek, previous), "")
}

// secReconfigure rewrites n's config with another secrets: block.
func secReconfigure(t *testing.T, n *apiNode, store secStore, kek, previous string) {
	t.Helper()
	writeConfig(t, n.testNode, n.yaml(store.yaml(), secSecretsYAML(kek, previous), ""))
}

// secRandom is a secret no other text of the test holds by chance: label
// and 12 random bytes in hex (URL-safe, so it can be a URL's password).
func secRandom(label string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return label + "-" + hex.EncodeToString(b)
}

// secForms are the plain encodings of secret a store could leak: the raw
// bytes, hex (lower and upper case), and base64 (standard and URL
// alphabets, padded and not), the latter also as the characters that
// encode it inside a longer base64 text, at each of the three byte
// alignments it can start at.
func secForms(secret string) map[string]string {
	forms := map[string]string{
		"raw":       secret,
		"hex":       hex.EncodeToString([]byte(secret)),
		"HEX":       strings.ToUpper(hex.EncodeToString([]byte(secret))),
		"base64":    base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64url": base64.URLEncoding.EncodeToString([]byte(secret)),
		"base64raw": base64.RawStdEncoding.EncodeToString([]byte(secret)),
		"b64urlraw": base64.RawURLEncoding.EncodeToString([]byte(secret)),
	}
	for k := 0; k < 3; k++ {
		in := append(make([]byte, k), secret...)
		first := (8*k + 5) / 6              // the first character wholly of secret's bits
		last := (8*(k+len(secret)) - 6) / 6 // the last one
		for name, enc := range map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding} {
			forms[fmt.Sprintf("base64-%s-inner-at-%d", name, k)] = enc.EncodeToString(in)[first : last+1]
		}
	}
	return forms
}

// secFinding is one plain form of a secret found somewhere.
type secFinding struct{ where, secret, form string }

func (f secFinding) String() string {
	return fmt.Sprintf("%s holds %s as %s", f.where, f.secret, f.form)
}

// secSearch lists the forms of each secret (by label) that hay holds.
func secSearch(where string, hay []byte, labeled map[string]string) []secFinding {
	var out []secFinding
	for label, secret := range labeled {
		for form, text := range secForms(secret) {
			if bytes.Contains(hay, []byte(text)) {
				out = append(out, secFinding{where, label, form})
			}
		}
	}
	return out
}

// secScanDir searches every regular file under dir, and returns what it
// found and how many files and bytes it read.
func secScanDir(t *testing.T, dir string, labeled map[string]string) (found []secFinding, files int, size int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		size += int64(len(b))
		rel, _ := filepath.Rel(dir, path)
		found = append(found, secSearch("file "+rel, b, labeled)...)
		return nil
	})
	if err != nil {
		t.Fatalf("cannot scan %s: %v", dir, err)
	}
	if files == 0 {
		t.Fatalf("the scan of %s read no file: it would prove nothing", dir)
	}
	return found, files, size
}

// secScanRedis searches every key of the namespace ns: its name, its
// DUMP, and its value as the commands of its type read it (a DUMP may be
// LZF-compressed). It returns what it found and how many keys it read.
func secScanRedis(t *testing.T, c *redis.Client, ns string, labeled map[string]string) (found []secFinding, keys int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var cursor uint64
	for {
		batch, next, err := c.Scan(ctx, cursor, ns+"*", 500).Result()
		if err != nil {
			t.Fatalf("SCAN %s*: %v", ns, err)
		}
		for _, k := range batch {
			keys++
			var hay bytes.Buffer
			hay.WriteString(k + "\n")
			dump, err := c.Dump(ctx, k).Result()
			if err != nil && err != redis.Nil {
				t.Fatalf("DUMP %s: %v", k, err)
			}
			hay.WriteString(dump + "\n")
			typ, err := c.Type(ctx, k).Result()
			if err != nil {
				t.Fatalf("TYPE %s: %v", k, err)
			}
			var parts []string
			switch typ {
			case "string":
				s, err := c.Get(ctx, k).Result()
				if err != nil && err != redis.Nil {
					t.Fatalf("GET %s: %v", k, err)
				}
				parts = []string{s}
			case "hash":
				m, err := c.HGetAll(ctx, k).Result()
				if err != nil {
					t.Fatalf("HGETALL %s: %v", k, err)
				}
				for f, v := range m {
					parts = append(parts, f, v)
				}
			case "zset":
				parts, err = c.ZRange(ctx, k, 0, -1).Result()
			case "set":
				parts, err = c.SMembers(ctx, k).Result()
			case "list":
				parts, err = c.LRange(ctx, k, 0, -1).Result()
			case "none": // expired meanwhile
			default:
				t.Fatalf("key %s has type %s, which the scan does not read", k, typ)
			}
			if err != nil {
				t.Fatalf("reading %s (%s): %v", k, typ, err)
			}
			hay.WriteString(strings.Join(parts, "\n"))
			found = append(found, secSearch("redis key "+k, hay.Bytes(), labeled)...)
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if keys == 0 {
		t.Fatalf("the scan of namespace %q read no key: it would prove nothing", ns)
	}
	return found, keys
}

// secFindingsText lists findings, one a line, sorted.
func secFindingsText(found []secFinding) string {
	lines := make([]string, len(found))
	for i, f := range found {
		lines[i] = f.String()
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// secRecord is the part of a stored source record these tests read and
// edit; the rest is kept as it was.
type secRecord map[string]json.RawMessage

// sealed is the record's sealed values by path.
func (r secRecord) sealed(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	if raw, ok := r["sealed"]; ok {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("the record's sealed values do not decode: %v", err)
		}
	}
	return m
}

func (r secRecord) setSealed(t *testing.T, m map[string]string) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	r["sealed"] = b
}

func secDecodeRecord(t *testing.T, what string, b []byte) secRecord {
	t.Helper()
	var r secRecord
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: the record does not decode: %v\n%s", what, err, b)
	}
	return r
}

func (r secRecord) encode(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// secKeyIDs counts the record's sealed values by the id of the key that
// sealed them.
func (r secRecord) keyIDs(t *testing.T) map[uint32]int {
	t.Helper()
	out := map[uint32]int{}
	for path, v := range r.sealed(t) {
		blob, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("sealed %s is not base64: %v", path, err)
		}
		id, ok := secrets.KeyIDOf(blob)
		if !ok {
			t.Fatalf("sealed %s is no sealed blob", path)
		}
		out[id]++
	}
	return out
}

// secMetaRecords opens the stopped node's meta store and returns its
// stored source records (persistent store) by "tenant/name".
func secMetaRecords(t *testing.T, n *testNode) map[string][]byte {
	t.Helper()
	ms, err := meta.Open(meta.Options{Dir: filepath.Join(n.dataDir, "meta")})
	if err != nil {
		t.Fatalf("cannot open the node's meta store: %v", err)
	}
	defer ms.Close()
	out := map[string][]byte{}
	err = ms.Sources(func(tenant, name string, record []byte) error {
		out[tenant+"/"+name] = bytes.Clone(record)
		return nil
	})
	if err != nil {
		t.Fatalf("cannot read the stored sources: %v", err)
	}
	return out
}

// secPutMetaRecords writes records ("tenant/name" -> record) into the
// stopped node's meta store, synced.
func secPutMetaRecords(t *testing.T, n *testNode, records map[string][]byte) {
	t.Helper()
	ms, err := meta.Open(meta.Options{Dir: filepath.Join(n.dataDir, "meta")})
	if err != nil {
		t.Fatalf("cannot open the node's meta store: %v", err)
	}
	defer ms.Close()
	b := ms.NewBatch()
	defer b.Close()
	for k, rec := range records {
		tenant, name, _ := strings.Cut(k, "/")
		b.PutSource(tenant, name, rec)
	}
	if err := b.Commit(meta.Sync); err != nil {
		t.Fatalf("cannot write the stored sources: %v", err)
	}
}

// secRedisRecord is the record of source name in the redis store's
// namespace ns (the "r" field of its hash).
func secRedisRecord(t *testing.T, c *redis.Client, ns, name string) []byte {
	t.Helper()
	v, err := c.HGet(context.Background(), ns+"ss:s/"+name, "r").Result()
	if err != nil {
		t.Fatalf("HGET %sss:s/%s r: %v", ns, name, err)
	}
	return []byte(v)
}

// secSetRedisRecord replaces the record of source name in place, its
// version left as it is.
func secSetRedisRecord(t *testing.T, c *redis.Client, ns, name string, record []byte) {
	t.Helper()
	if err := c.HSet(context.Background(), ns+"ss:s/"+name, "r", string(record)).Err(); err != nil {
		t.Fatalf("HSET %sss:s/%s r: %v", ns, name, err)
	}
}

// secServeRefuses runs serve on n, which must exit non-zero by itself
// within 20 s, and returns its output.
func secServeRefuses(t *testing.T, n *testNode, what string) string {
	t.Helper()
	p := startProc(t, n.dir, "serve", "-config", n.config)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: serve still runs after 20 s, want a refusal:\n%s", what, p.stderr)
	}
	if code := p.state.ExitCode(); code == 0 {
		t.Fatalf("%s: serve exited 0, want non-zero:\n%s", what, p.stderr)
	}
	return p.stderr.String()
}

// secHMACSpec is the verify block of a generic hmac source (hex
// HMAC-SHA256 of the body in X-Signature); extra holds its secret keys.
func secHMACSpec(extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return `{"type":"hmac","header":"X-Signature","algorithm":"sha256","encoding":"hex"` + extra + `}`
}

// secSigned sends a hook to acme's source signed with key and requires
// the status.
func secSigned(t *testing.T, n *apiNode, source, key string, status int) {
	t.Helper()
	body := fmt.Sprintf(`{"to":%q,"nonce":%q}`, source, secRandom("n"))
	wantStatus(t, "a hook to "+source, n.hook("acme", source, body, "X-Signature", hmacHex(key, body)), status)
}
