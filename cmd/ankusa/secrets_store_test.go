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
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/redistest"
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
		mq := fmt.Sprintf(`{"id":"mq","type":"rabbitmq","url":%q,"exchange":"sec-hooks"}`, fmt.Sprintf(mqURL, mqPassword))
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
	for _, key := range []string{"gh1 verify.secret"} {
		secSigned(t, n, "gh1", s[key], http.StatusCreated)
	}
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
		// A node whose mirror is at the version of these records does not
		// read them again: a fresh node (first boot on the namespace) does.
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
