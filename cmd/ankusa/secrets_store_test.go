package main

// Issue 18, acceptance 3 and 4: a stored source's secrets rest sealed
// (secrets.kek), checked from the outside against the built binary: a
// scan of every file under data_dir and of every key of the Redis
// namespace finds none of them in any plain encoding while the API and
// verification work; a sealed value moved to another source, or a wrong
// key, stops the boot naming the source and the field; a rotation
// (kek_previous, `ankusa rewrap` killed midway and rerun) ends with every
// source verifying under the new key alone; and secrets stored in clear
// before a KEK was set are counted at boot and sealed by a write or a
// rewrap.

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ankusa/ankusa/internal/redistest"
	"github.com/ankusa/ankusa/secrets"
)

// TestSecretsAtRestScan (acceptance 3): on both writable stores, sources
// holding a verify secret, a rotation list of verify secrets, an http sink
// secret and a rabbitmq URL password, one of them updated without its
// secrets, all verifying their hooks; then no file of data_dir and no key
// of the namespace holds any secret in clear, base64 or hex, and no answer
// of the API shows one. The same run without a kek must find every
// secret: otherwise the scan proves nothing.
func TestSecretsAtRestScan(t *testing.T) {
	for _, kind := range []string{"persistent", "redis"} {
		for _, sealed := range []bool{true, false} {
			name := kind + "/sealed"
			if !sealed {
				name = kind + "/in-clear-the-scan-finds-them"
			}
			t.Run(name, func(t *testing.T) { secAtRestScan(t, kind, sealed) })
		}
	}
}

func secAtRestScan(t *testing.T, kind string, sealed bool) {
	store := secStoreOf(t, kind)
	dir := t.TempDir()
	kek := ""
	if sealed {
		kek = secKEKRef(t, dir, "k1", secKey("scan-"+kind))
	}
	n := secNode(t, store, kek, "")
	recv := newSinkRecorder(t)
	s := map[string]string{
		"gh1 verify.secret":      secRandom("vsec"),
		"gh1 sinks[0].secret":    secRandom("sinksec"),
		"gh1 sinks[1].url":       secRandom("amqppw"),
		"rot1 verify.secret":     secRandom("rotcur"),
		"rot1 verify.secrets[0]": secRandom("rotold"),
		"rot1 verify.secrets[1]": secRandom("rotolder"),
	}
	p := n.serve(t)
	mqURL := "amqp://guest:%s@127.0.0.1:5672/"
	gh1 := func(verifySecret, webSecret, mqPassword string) string {
		web := fmt.Sprintf(`{"id":"web","type":"http","url":%q,"allow_private":true%s}`, recv.url+"/good/gh1", webSecret)
		mq := fmt.Sprintf(`{"id":"mq","type":"rabbitmq","url":%q,"exchange":"sec-hooks","connect_timeout":"300ms","timeout":"500ms"}`, fmt.Sprintf(mqURL, mqPassword))
		return fmt.Sprintf(`{"verify":%s,"sinks":[%s,%s]}`, secHMACSpec(verifySecret), web, mq)
	}
	create := gh1(fmt.Sprintf(`"secret":%q`, s["gh1 verify.secret"]), fmt.Sprintf(`,"secret":%q`, s["gh1 sinks[0].secret"]), s["gh1 sinks[1].url"])
	wantStatus(t, "POST gh1", n.do("POST", sourcesOf("acme"), opsToken, `{"name":"gh1",`+create[1:]), http.StatusCreated)
	rot := fmt.Sprintf(`{"name":"rot1","verify":%s}`, secHMACSpec(fmt.Sprintf(`"secret":%q,"secrets":[%q,%q]`,
		s["rot1 verify.secret"], s["rot1 verify.secrets[0]"], s["rot1 verify.secrets[1]"])))
	wantStatus(t, "POST rot1", n.do("POST", sourcesOf("acme"), opsToken, rot), http.StatusCreated)

	// An update that omits every secret of gh1, its URL password given
	// back redacted, keeps them all.
	a := n.do("PUT", sourceAt("acme", "gh1"), opsToken, gh1("", "", secRedacted))
	wantStatus(t, "PUT gh1 without its secrets", a, http.StatusOK)
	secSigned(t, n, "gh1", s["gh1 verify.secret"], http.StatusCreated)
	for _, key := range []string{"rot1 verify.secret", "rot1 verify.secrets[0]", "rot1 verify.secrets[1]"} {
		secSigned(t, n, "rot1", s[key], http.StatusCreated)
	}
	secSigned(t, n, "gh1", "not-the-secret", http.StatusUnauthorized)
	secSigned(t, n, "rot1", "not-the-secret", http.StatusUnauthorized)
	if !waitFor(10*time.Second, func() bool { return len(recv.delivered()) >= 1 }) {
		t.Fatalf("the http sink of gh1 received nothing in 10 s")
	}

	// The API shows no secret, names where they are, and shows the URL
	// password redacted.
	answers := map[string]answer{
		"GET gh1":  n.do("GET", sourceAt("acme", "gh1"), opsToken, ""),
		"GET rot1": n.do("GET", sourceAt("acme", "rot1"), opsToken, ""),
		"the list": n.do("GET", sourcesOf("acme"), opsToken, ""),
		"PUT gh1":  a,
	}
	for what, a := range answers {
		wantStatus(t, what, a, http.StatusOK)
		if found := secSearch(what, a.body, s); len(found) > 0 {
			t.Errorf("%s shows secrets:\n%s\n%s", what, secFindingsText(found), a.body)
		}
	}
	var got sourceAnswer
	decode(t, "GET gh1", answers["GET gh1"], &got)
	if want := []string{"verify.secret", "sinks[0].secret", "sinks[1].url"}; strings.Join(got.SecretsSet, " ") != strings.Join(want, " ") {
		t.Errorf("GET gh1: secrets_set %q, want %q", got.SecretsSet, want)
	}
	if !strings.Contains(string(answers["GET gh1"].body), `"amqp://guest:redacted@127.0.0.1:5672/"`) {
		t.Errorf("GET gh1 does not show the rabbitmq URL with its password redacted: %s", answers["GET gh1"].body)
	}
	decode(t, "GET rot1", answers["GET rot1"], &got)
	if want := []string{"verify.secret", "verify.secrets[0]", "verify.secrets[1]"}; strings.Join(got.SecretsSet, " ") != strings.Join(want, " ") {
		t.Errorf("GET rot1: secrets_set %q, want %q", got.SecretsSet, want)
	}
	p.stop()

	found, files, size := secScanDir(t, n.dataDir, s)
	keys := 0
	if kind == "redis" {
		var inRedis []secFinding
		inRedis, keys = secScanRedis(t, redistest.Client(t, store.url), store.ns, s)
		found = append(found, inRedis...)
	}
	t.Logf("scanned %d files (%d bytes) under data_dir and %d keys of the namespace: %d findings", files, size, keys, len(found))
	if sealed {
		if len(found) > 0 {
			t.Fatalf("secrets rest in clear although secrets.kek is set:\n%s", secFindingsText(found))
		}
		secSealedAndServed(t, n, store, kek, secKey("scan-"+kind), s)
		return
	}
	// Without a kek every secret rests in clear: the scan must see each.
	seen := map[string]bool{}
	for _, f := range found {
		seen[f.secret] = true
	}
	for label := range s {
		if !seen[label] {
			t.Errorf("without secrets.kek the scan did not find %s (%s) in clear: the scan is blind to it", label, s[label])
		}
	}
}

// secSealedAndServed proves the clean scan is not of secrets lost: the
// stored records seal each secret at its path, opening under key (bound to
// acme, the source and the path) to the very value given (the ones gh1's
// update omitted or sent back redacted too), and a node booted on them
// (the same node; with the redis store a fresh one too, from Redis alone)
// verifies hooks signed with each verify secret.
func secSealedAndServed(t *testing.T, n *apiNode, store secStore, kek string, key []byte, s map[string]string) {
	t.Helper()
	kr, err := secrets.NewKeyring(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := secRecordsOf(t, n, store, "gh1", "rot1")
	for name, want := range map[string]string{
		"gh1":  "sinks[0].secret sinks[1].url verify.secret",
		"rot1": "verify.secret verify.secrets[0] verify.secrets[1]",
	} {
		sealed := secDecodeRecord(t, name, recs["acme/"+name]).sealed(t)
		got := make([]string, 0, len(sealed))
		for path, v := range sealed {
			got = append(got, path)
			blob, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				t.Fatalf("%s's sealed %s is not base64: %v", name, path, err)
			}
			plain, _, err := kr.Open(blob, secrets.AD{Tenant: "acme", Source: name, Field: path})
			if err != nil || string(plain) != s[name+" "+path] {
				t.Errorf("%s's sealed %s opens to %q (%v), want the secret given, %q", name, path, plain, err, s[name+" "+path])
			}
		}
		sort.Strings(got)
		if strings.Join(got, " ") != want {
			t.Errorf("the stored record of %s seals %q, want %q", name, got, want)
		}
	}
	nodes := []*apiNode{n}
	if store.kind == "redis" {
		nodes = append(nodes, secNode(t, store, kek, ""))
	}
	for _, node := range nodes {
		p := node.serve(t)
		secSigned(t, node, "gh1", s["gh1 verify.secret"], http.StatusCreated)
		for _, key := range []string{"rot1 verify.secret", "rot1 verify.secrets[0]", "rot1 verify.secrets[1]"} {
			secSigned(t, node, "rot1", s[key], http.StatusCreated)
		}
		secSigned(t, node, "rot1", s["gh1 verify.secret"], http.StatusUnauthorized)
		p.stop()
	}
}

// secRedacted is config.Redacted, what an answer shows for a URL's
// password, spelled here as an operator sends it back.
const secRedacted = "redacted"

// TestSecretsScanFindsEveryForm: the scan's search sees a secret in each
// encoding it claims to, wherever the secret starts inside a longer text
// (so a clean scan of the sealed stores means something for the encoded
// forms too, not only for the raw bytes the in-clear run finds).
func TestSecretsScanFindsEveryForm(t *testing.T) {
	secret := secRandom("form")
	labeled := map[string]string{"s": secret}
	for pre := 0; pre < 3; pre++ {
		in := []byte(strings.Repeat("P", pre) + secret + "-suffix")
		for name, text := range map[string]string{
			"raw":             string(in),
			"hex":             hex.EncodeToString(in),
			"HEX":             strings.ToUpper(hex.EncodeToString(in)),
			"base64":          base64.StdEncoding.EncodeToString(in),
			"base64url":       base64.URLEncoding.EncodeToString(in),
			"base64 no pad":   base64.RawStdEncoding.EncodeToString(in),
			"base64url nopad": base64.RawURLEncoding.EncodeToString(in),
		} {
			if found := secSearch(name, []byte("{"+text+"}"), labeled); len(found) == 0 {
				t.Errorf("%s of the secret after %d bytes: not found in %s", name, pre, text)
			}
		}
	}
	if found := secSearch("another", []byte(secRandom("form")), labeled); len(found) > 0 {
		t.Errorf("another secret of the same shape matches: %s", secFindingsText(found))
	}
}

// secRefusal matches the boot's refusal of a stored source whose sealed
// verify secret no configured key opens.
var secRefusal = regexp.MustCompile(`stored source \\?"sw-[ab]\\?" of tenant \\?"acme\\?": field verify\.secret: secrets: `)

// TestSecretsSwappedAndWrongKey (acceptance 4, first half): two sources'
// sealed verify secrets swapped directly in the store, or the node's kek
// replaced by another key, stop the boot with a message naming the source
// and the field; with the records put back and the right key the same
// node boots and verifies (so the refusals were the swap's and the key's).
func TestSecretsSwappedAndWrongKey(t *testing.T) {
	t.Run("persistent", func(t *testing.T) {
		store := secStoreOf(t, "persistent")
		k1 := secKEKRef(t, t.TempDir(), "k1", secKey("swap-1"))
		k2 := secKEKRef(t, t.TempDir(), "k2", secKey("swap-2"))
		n := secNode(t, store, k1, "")
		keys := secCreatePair(t, n)
		orig := secMetaRecords(t, n.testNode)
		secPutMetaRecords(t, n.testNode, secSwapped(t, orig["acme/sw-a"], orig["acme/sw-b"]))
		secWantRefusal(t, "the boot after the swap", secServeRefuses(t, n.testNode, "the boot after the swap"))

		secPutMetaRecords(t, n.testNode, map[string][]byte{"acme/sw-a": orig["acme/sw-a"], "acme/sw-b": orig["acme/sw-b"]})
		secReconfigure(t, n, store, k2, "")
		secWantRefusal(t, "the boot under another kek", secServeRefuses(t, n.testNode, "the boot under another kek"))

		secReconfigure(t, n, store, k1, "")
		secPairVerifies(t, n, keys)
	})
	t.Run("redis", func(t *testing.T) {
		store := secStoreOf(t, "redis")
		c := redistest.Client(t, store.url)
		k1 := secKEKRef(t, t.TempDir(), "k1", secKey("swap-1"))
		k2 := secKEKRef(t, t.TempDir(), "k2", secKey("swap-2"))
		n := secNode(t, store, k1, "")
		keys := secCreatePair(t, n)
		orig := map[string][]byte{"acme/sw-a": secRedisRecord(t, c, store.ns, "sw-a"), "acme/sw-b": secRedisRecord(t, c, store.ns, "sw-b")}
		for k, rec := range secSwapped(t, orig["acme/sw-a"], orig["acme/sw-b"]) {
			secSetRedisRecord(t, c, store.ns, strings.TrimPrefix(k, "acme/"), rec)
		}
		// A boot reads the namespace whole: the node with a mirror of these
		// records refuses as a fresh node (first boot on the namespace) does.
		secWantRefusal(t, "the boot of the node with a mirror after the swap", secServeRefuses(t, n.testNode, "the boot of the node with a mirror after the swap"))
		fresh := secNode(t, store, k1, "")
		secWantRefusal(t, "a fresh node's boot after the swap", secServeRefuses(t, fresh.testNode, "a fresh node's boot after the swap"))

		for k, rec := range orig {
			secSetRedisRecord(t, c, store.ns, strings.TrimPrefix(k, "acme/"), rec)
		}
		other := secNode(t, store, k2, "")
		secWantRefusal(t, "a fresh node's boot under another kek", secServeRefuses(t, other.testNode, "a fresh node's boot under another kek"))
		secReconfigure(t, n, store, k2, "")
		secWantRefusal(t, "the boot of the node with a mirror, under another kek", secServeRefuses(t, n.testNode, "the boot of the node with a mirror, under another kek"))

		secReconfigure(t, other, store, k1, "")
		secPairVerifies(t, other, keys)
		secReconfigure(t, n, store, k1, "")
		secPairVerifies(t, n, keys)
	})
}

// secCreatePair creates acme's sources sw-a and sw-b, each with a verify
// secret of its own, checks they verify, stops the node, and returns the
// secrets by source.
func secCreatePair(t *testing.T, n *apiNode) map[string]string {
	t.Helper()
	keys := map[string]string{"sw-a": secRandom("swa"), "sw-b": secRandom("swb")}
	p := n.serve(t)
	for name, key := range keys {
		body := fmt.Sprintf(`{"name":%q,"verify":%s}`, name, secHMACSpec(fmt.Sprintf(`"secret":%q`, key)))
		wantStatus(t, "POST "+name, n.do("POST", sourcesOf("acme"), opsToken, body), http.StatusCreated)
		secSigned(t, n, name, key, http.StatusCreated)
	}
	p.stop()
	return keys
}

// secPairVerifies boots n and requires each source to verify hooks
// signed with its own secret and refuse those signed with the other's.
func secPairVerifies(t *testing.T, n *apiNode, keys map[string]string) {
	t.Helper()
	p := n.serve(t)
	secSigned(t, n, "sw-a", keys["sw-a"], http.StatusCreated)
	secSigned(t, n, "sw-b", keys["sw-b"], http.StatusCreated)
	secSigned(t, n, "sw-a", keys["sw-b"], http.StatusUnauthorized)
	secSigned(t, n, "sw-b", keys["sw-a"], http.StatusUnauthorized)
	p.stop()
}

// secSwapped is the records of sw-a and sw-b with their sealed verify
// secrets swapped, the rest of each record as it was.
func secSwapped(t *testing.T, a, b []byte) map[string][]byte {
	t.Helper()
	ra, rb := secDecodeRecord(t, "sw-a", a), secDecodeRecord(t, "sw-b", b)
	sa, sb := ra.sealed(t), rb.sealed(t)
	if sa["verify.secret"] == "" || sb["verify.secret"] == "" {
		t.Fatalf("the records hold no sealed verify.secret to swap:\n%s\n%s", a, b)
	}
	sa["verify.secret"], sb["verify.secret"] = sb["verify.secret"], sa["verify.secret"]
	ra.setSealed(t, sa)
	rb.setSealed(t, sb)
	return map[string][]byte{"acme/sw-a": ra.encode(t), "acme/sw-b": rb.encode(t)}
}

// secWantRefusal requires the output of a refused boot to name sw-a or
// sw-b and the field verify.secret.
func secWantRefusal(t *testing.T, what, out string) {
	t.Helper()
	if !secRefusal.MatchString(out) {
		t.Fatalf("%s: the refusal does not name the source and the field verify.secret:\n%s", what, out)
	}
}

// secRotationSources is how many sources the rotation test seals: enough
// that a rewrap at -rate 200 takes seconds, so a kill lands midway.
const secRotationSources = 600

// TestSecretsRotation (acceptance 4, second half), on the redis store
// with two nodes: 600 sources sealed under key 1; both nodes move to kek
// key 2 with kek_previous key 1; `ankusa rewrap -rate 200` (node A
// stopped, node B running) is killed midway with part of Redis under each
// key, and a fresh node without kek_previous refuses to boot then; a rerun
// rewraps exactly the rest, a third run nothing; both nodes then boot
// without kek_previous and every sampled source verifies its secret.
func TestSecretsRotation(t *testing.T) {
	store := secStoreOf(t, "redis")
	c := redistest.Client(t, store.url)
	dir := t.TempDir()
	key1, key2 := secKey("rotation-1"), secKey("rotation-2")
	k1, k2 := secKEKRef(t, dir, "k1", key1), secKEKRef(t, dir, "k2", key2)
	id1, id2 := secrets.KeyID(key1), secrets.KeyID(key2)
	a, b := secNode(t, store, k1, ""), secNode(t, store, k1, "")
	pa, pb := a.serve(t), b.serve(t)

	keys := secCreateMany(t, a, secRotationSources)
	sample := make([]string, 0, 50)
	for i := 0; i < secRotationSources; i += secRotationSources / 50 {
		sample = append(sample, secRotName(i))
	}
	for _, name := range sample {
		ok := waitFor(10*time.Second, func() bool {
			body := `{"probe":1}`
			r, err := b.tryHookAt("/webhooks/acme/"+name, body, "X-Signature", hmacHex(keys[name], body))
			return err == nil && r.status == http.StatusCreated
		})
		if !ok {
			t.Fatalf("node B does not serve %s, created on node A, within 10 s", name)
		}
	}
	pa.stop()
	pb.stop()
	if got := secRedisKeyIDs(t, c, store.ns, keys); got[id1] != secRotationSources {
		t.Fatalf("before the rotation, records by key id: %v, want all %d under key 1 (%#08x)", got, secRotationSources, id1)
	}

	secReconfigure(t, a, store, k2, k1)
	secReconfigure(t, b, store, k2, k1)
	pb = b.serve(t) // B runs through the rewrap, reloading what it rewrites

	start := time.Now()
	rw := startProc(t, a.dir, "rewrap", "-config", a.config, "-rate", "200")
	part := fmt.Sprintf("rewrap: redis namespace %q: 100 sources read", store.ns)
	if !waitFor(20*time.Second, func() bool { return strings.Contains(rw.stderr.String(), part) || rw.exited() }) {
		t.Fatalf("rewrap printed no progress of the redis namespace in 20 s:\n%s", rw.stderr)
	}
	rw.kill9()
	t.Logf("rewrap killed %s after its start:\n%s", time.Since(start).Round(time.Millisecond), rw.stderr)
	mid := secRedisKeyIDs(t, c, store.ns, keys)
	if mid[id2] == 0 || mid[id1] == 0 || mid[id1]+mid[id2] != secRotationSources {
		t.Fatalf("after the kill, records by key id: %v, want some under key 1 (%#08x) and some under key 2 (%#08x), %d in all", mid, id1, id2, secRotationSources)
	}
	t.Logf("after the kill: %d records under key 2, %d under key 1", mid[id2], mid[id1])

	fresh := secNode(t, store, k2, "")
	out := secServeRefuses(t, fresh.testNode, "a fresh node without kek_previous before the rewrap is done")
	if !regexp.MustCompile(`stored source \\?"rot-\d+\\?" of tenant \\?"acme\\?": field verify\.secret: secrets: `).MatchString(out) {
		t.Fatalf("a fresh node without kek_previous before the rewrap is done: the refusal does not name a source and its field:\n%s", out)
	}

	start = time.Now()
	code, stdout, stderr := runBin(t, a.dir, "rewrap", "-config", a.config)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("the rerun of rewrap: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("the rerun took %s:\n%s", took.Round(time.Millisecond), stdout)
	wantLine := fmt.Sprintf("rewrap: redis namespace %q: %d sources read, %d rewrapped (%d secrets), %d already under secrets.kek or holding none\n",
		store.ns, secRotationSources, mid[id1], mid[id1], mid[id2])
	if !strings.HasSuffix(stdout, fmt.Sprintf("rewrapped %d secrets in %d source records\n", mid[id1], mid[id1])) {
		t.Fatalf("the rerun of rewrap printed:\n%s\nwant last the total of %d, the records still under key 1", stdout, mid[id1])
	}
	if !strings.Contains(stdout, wantLine) {
		// Not fatal: what follows does not depend on the count.
		t.Errorf("the rerun of rewrap printed:\n%s\nwant the line %q: the namespace holds %d sources", stdout, wantLine, secRotationSources)
	}
	if got := secRedisKeyIDs(t, c, store.ns, keys); got[id2] != secRotationSources {
		t.Fatalf("after the rerun, records by key id: %v, want all %d under key 2 (%#08x)", got, secRotationSources, id2)
	}
	code, stdout, stderr = runBin(t, a.dir, "rewrap", "-config", a.config)
	if code != 0 || !strings.HasSuffix(stdout, "rewrapped 0 secrets in 0 source records\n") {
		t.Fatalf("a third run of rewrap: exit %d, want 0 and nothing rewrapped:\n%s%s", code, stdout, stderr)
	}
	pb.stop()

	secReconfigure(t, a, store, k2, "")
	secReconfigure(t, b, store, k2, "")
	for _, n := range []*apiNode{a, b} {
		p := n.serve(t)
		for _, name := range sample {
			secSigned(t, n, name, keys[name], http.StatusCreated)
		}
		secSigned(t, n, sample[0], keys[sample[1]], http.StatusUnauthorized)
		secSigned(t, n, sample[1], "not-the-secret", http.StatusUnauthorized)
		p.stop()
	}
}

func secRotName(i int) string { return fmt.Sprintf("rot-%03d", i) }

// secCreateMany creates count hmac sources of acme on n, 16 at a time,
// each with a secret of its own, and returns the secrets by name.
func secCreateMany(t *testing.T, n *apiNode, count int) map[string]string {
	t.Helper()
	keys := make(map[string]string, count)
	for i := range count {
		keys[secRotName(i)] = secRandom("rot")
	}
	start := time.Now()
	names := make(chan string)
	errs := make(chan error, count)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				body := fmt.Sprintf(`{"name":%q,"verify":%s}`, name, secHMACSpec(fmt.Sprintf(`"secret":%q`, keys[name])))
				a, err := n.tryDo("POST", sourcesOf("acme"), opsToken, body)
				if err == nil && a.status != http.StatusCreated {
					err = fmt.Errorf("POST %s: %d %s", name, a.status, a.body)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	for name := range keys {
		names <- name
	}
	close(names)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("created %d sources in %s", count, time.Since(start).Round(time.Millisecond))
	return keys
}

// secRedisKeyIDs counts the sealed values of the named sources' records
// in the namespace by the id of the key that sealed them.
func secRedisKeyIDs(t *testing.T, c *redis.Client, ns string, names map[string]string) map[uint32]int {
	t.Helper()
	out := map[uint32]int{}
	for name := range names {
		for id, k := range secDecodeRecord(t, name, secRedisRecord(t, c, ns, name)).keyIDs(t) {
			out[id] += k
		}
	}
	return out
}

// TestSecretsClearSealedOnWrite: sources stored in clear before a kek was
// set keep verifying once it is; the boot counts them (a WARN line with
// the numbers), a write of one seals its secrets, and `ankusa rewrap`
// seals the rest, after which no file of data_dir holds one in clear.
func TestSecretsClearSealedOnWrite(t *testing.T) {
	for _, kind := range []string{"persistent", "redis"} {
		t.Run(kind, func(t *testing.T) { secClearSealedOnWrite(t, kind) })
	}
}

func secClearSealedOnWrite(t *testing.T, kind string) {
	store := secStoreOf(t, kind)
	kek := secKEKRef(t, t.TempDir(), "k1", secKey("clear"))
	recv := newSinkRecorder(t)
	s := map[string]string{
		"c1 verify.secret":     secRandom("c1v"),
		"c2 verify.secret":     secRandom("c2v"),
		"c2 verify.secrets[0]": secRandom("c2old"),
		"c3 sinks[0].secret":   secRandom("c3web"),
		"c3 sinks[1].url":      secRandom("c3mq"),
	}
	n := secNode(t, store, "", "")
	p := n.serve(t)
	for _, body := range []string{
		fmt.Sprintf(`{"name":"c1","verify":%s}`, secHMACSpec(fmt.Sprintf(`"secret":%q`, s["c1 verify.secret"]))),
		fmt.Sprintf(`{"name":"c2","verify":%s}`, secHMACSpec(fmt.Sprintf(`"secret":%q,"secrets":[%q]`, s["c2 verify.secret"], s["c2 verify.secrets[0]"]))),
		fmt.Sprintf(`{"name":"c3","verify":{"type":"none"},"sinks":[{"id":"web","type":"http","url":%q,"allow_private":true,"secret":%q},`+
			`{"id":"mq","type":"rabbitmq","url":"amqp://guest:%s@127.0.0.1:5672/","exchange":"sec-hooks"}]}`,
			recv.url+"/good/c3", s["c3 sinks[0].secret"], s["c3 sinks[1].url"]),
		`{"name":"c4","verify":{"type":"none"}}`,
	} {
		wantStatus(t, "POST "+body[:20], n.do("POST", sourcesOf("acme"), opsToken, body), http.StatusCreated)
	}
	p.stop()
	if found, _, _ := secScanDir(t, n.dataDir, s); len(secLabelsOf(found)) != len(s) {
		t.Fatalf("without a kek, the scan finds %d of the %d secrets in clear:\n%s", len(secLabelsOf(found)), len(s), secFindingsText(found))
	}

	secReconfigure(t, n, store, kek, "")
	p = n.serve(t)
	verifies := func() {
		t.Helper()
		secSigned(t, n, "c1", s["c1 verify.secret"], http.StatusCreated)
		secSigned(t, n, "c2", s["c2 verify.secret"], http.StatusCreated)
		secSigned(t, n, "c2", s["c2 verify.secrets[0]"], http.StatusCreated)
		secSigned(t, n, "c2", s["c1 verify.secret"], http.StatusUnauthorized)
	}
	verifies()
	a := n.do("PUT", sourceAt("acme", "c1"), opsToken, `{"verify":`+secHMACSpec("")+`,"max_body_bytes":8192}`)
	wantStatus(t, "PUT c1 without its secret", a, http.StatusOK)
	secSigned(t, n, "c1", s["c1 verify.secret"], http.StatusCreated)
	p.stop()
	secWantClearWarning(t, "the first boot with a kek", p.stderr.String(), 3, 5)

	// The write sealed c1, and c1 only.
	recs := secRecordsOf(t, n, store, "c1", "c2", "c3", "c4")
	for name, want := range map[string]int{"c1": 0, "c2": 2, "c3": 2, "c4": 0} {
		found := secLabelsOf(secSearch(name, recs["acme/"+name], s))
		if len(found) != want {
			t.Errorf("after c1's update, the record of %s holds %d secrets in clear (%v), want %d", name, len(found), found, want)
		}
	}
	if sealed := secDecodeRecord(t, "c1", recs["acme/c1"]).sealed(t); len(sealed) != 1 || sealed["verify.secret"] == "" {
		t.Errorf("after its update, c1's record seals %v, want verify.secret", sealed)
	}
	p = n.serve(t)
	p.stop()
	secWantClearWarning(t, "the boot after c1's update", p.stderr.String(), 2, 4)

	code, stdout, stderr := runBin(t, n.dir, "rewrap", "-config", n.config)
	t.Logf("rewrap:\n%s", stdout)
	// The persistent store rewraps its records; the redis store its
	// namespace and the node's mirror of it: 4 secrets of 2 sources in
	// each.
	wantLines := []string{"rewrap: meta store: 4 sources read, 2 rewrapped (4 secrets), 2 already under secrets.kek or holding none\n", "rewrapped 4 secrets in 2 source records\n"}
	if kind == "redis" {
		wantLines = []string{"rewrap: local mirror: 4 sources read, 2 rewrapped (4 secrets), 2 already under secrets.kek or holding none\n", "rewrapped 8 secrets in 4 source records\n"}
	}
	if code != 0 || !strings.Contains(stdout, wantLines[0]) || !strings.HasSuffix(stdout, wantLines[1]) {
		t.Fatalf("rewrap: exit %d, want 0 and the lines %q:\n%s%s", code, wantLines, stdout, stderr)
	}
	if line := fmt.Sprintf("rewrap: redis namespace %q: 4 sources read, 2 rewrapped (4 secrets), 2 already under secrets.kek or holding none\n", store.ns); kind == "redis" && !strings.Contains(stdout, line) {
		t.Errorf("rewrap does not print the line %q (the namespace holds 4 sources):\n%s", line, stdout)
	}
	for k, rec := range secRecordsOf(t, n, store, "c1", "c2", "c3", "c4") {
		if found := secSearch(k, rec, s); len(found) > 0 {
			t.Errorf("after rewrap, a stored record holds secrets in clear:\n%s", secFindingsText(found))
		}
	}
	if kind == "redis" {
		if found, _ := secScanRedis(t, redistest.Client(t, store.url), store.ns, s); len(found) > 0 {
			t.Errorf("after rewrap, the namespace holds secrets in clear:\n%s", secFindingsText(found))
		}
	}
	p = n.serve(t)
	verifies()
	p.stop()
	if strings.Contains(p.stderr.String(), "in clear although secrets.kek is set") {
		t.Errorf("the boot after rewrap still warns of secrets in clear:\n%s", p.stderr)
	}
	if found, files, _ := secScanDir(t, n.dataDir, s); len(found) > 0 {
		t.Errorf("after rewrap, the scan of %d files under data_dir finds secrets stored in clear before it (superseded values the meta store keeps):\n%s", files, secFindingsText(found))
	}
}

// secWantClearWarning requires the boot log to warn that sources stored
// sources hold secrets in clear.
func secWantClearWarning(t *testing.T, what, log string, sources, secrets int) {
	t.Helper()
	want := fmt.Sprintf("%d stored sources hold %d secrets in clear although secrets.kek is set", sources, secrets)
	if !strings.Contains(log, want) {
		t.Fatalf("%s: the log does not say %q:\n%s", what, want, log)
	}
}

// secLabelsOf is the labels of the secrets found, each once.
func secLabelsOf(found []secFinding) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range found {
		if !seen[f.secret] {
			seen[f.secret] = true
			out = append(out, f.secret)
		}
	}
	return out
}

// secRecordsOf is the stored records of acme's sources by "tenant/name":
// every one of the stopped node's meta store (persistent), or those named
// of Redis.
func secRecordsOf(t *testing.T, n *apiNode, store secStore, names ...string) map[string][]byte {
	t.Helper()
	if store.kind != "redis" {
		return secMetaRecords(t, n.testNode)
	}
	c := redistest.Client(t, store.url)
	out := map[string][]byte{}
	for _, name := range names {
		out["acme/"+name] = secRedisRecord(t, c, store.ns, name)
	}
	return out
}
