package main

// Issue 19, acceptance 3: large hooks through a Kafka sink with claims.
// Hooks of 1-4 MiB across 20 tenants go through the built binary to a
// kfake cluster whose brokers keep Kafka's default limit (a record batch
// of at most 1 MiB), with claim: {over_bytes: 256KiB} on a dir claim
// store. Every message must be under the broker's limit, carry a
// reference (body_claim) that resolves to the exact body sent (SHA-256),
// and deleting one tenant's claims (`ankusa claim delete -tenant`,
// `claims/tenant=<t>/` in every store) must remove exactly that tenant's
// packs and leave every other claim resolvable.
//
// make test runs it with 200 hooks (about 500 MiB of bodies); the whole
// acceptance run is `make soak-claims` (-claim-hooks 10000, about 25 GiB):
//
//	go test ./cmd/ankusa -run TestClaimKafkaLargeBodies -v -timeout 1h -args -claim-hooks 10000

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ankusa/ankusa/envelope"
)

var flagClaimHooks = flag.Int("claim-hooks", 200, "hooks of 1-4 MiB sent by TestClaimKafkaLargeBodies (the acceptance run: 10000)")

// claimKafkaLimit is the brokers' limit on a record batch, Kafka's
// default message.max.bytes, which kfake keeps.
const claimKafkaLimit = 1048588

// claimKafkaSenders is how many hooks are in flight at once; with 20
// tenants and packs closed 250ms after their first body, a pack holds the
// bodies of a tenant that arrive within that time.
const claimKafkaSenders = 32

const claimKafkaYAML = `node: {name: claim-kafka, data_dir: %[1]s}
listen: %[2]s
admin:
  listen: %[3]s
  tokens: [{name: ops, sha256: %[4]s, scopes: ["tenant:*"]}]
limits: {max_body_bytes: 5MiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 100000, burst: 100000, max_queue_bytes: 256MiB}
segment: {retain_local: 1m}
log: {level: warn, format: json}
claims:
  stores:
    packs: {type: dir, path: %[5]s, pack_delay: 250ms}
sources:
  big:
    verify: {type: none}
    trust_url_tenant: true
    sinks:
      - {id: kafka, type: kafka, brokers: %[6]s, topic: hooks, format: envelope, claim: {store: packs, over_bytes: 256KiB}}
`

type claimKafkaSent struct {
	tenant string
	sum    [sha256.Size]byte
	size   int
}

func TestClaimKafkaLargeBodies(t *testing.T) {
	hooks := *flagClaimHooks
	const tenants = 20
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(8, "hooks"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	token := "claim-kafka-token-" + fmt.Sprint(rand.Uint64())
	tokenSum := sha256.Sum256([]byte(token))
	var store string
	n := newConfiguredNode(t, func(n *testNode) string {
		store = filepath.Join(n.dir, "claims")
		return fmt.Sprintf(claimKafkaYAML, n.dataDir, n.listen, n.admin, hex.EncodeToString(tokenSum[:]), store, walNoneYAMLList(c.ListenAddrs()))
	})
	p := n.serve(t)
	defer p.stop()

	// Send: claimKafkaSenders senders, bodies of 1-4 MiB of text (compressible, as JSON
	// is, so the segments stay small), each body its own.
	began := time.Now()
	sent := map[string]claimKafkaSent{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var total int64
	next := make(chan int)
	errs := make(chan error, claimKafkaSenders)
	for range claimKafkaSenders {
		wg.Go(func() {
			client := &http.Client{Timeout: time.Minute}
			for i := range next {
				tn := fmt.Sprintf("t%d", i%tenants)
				body := claimKafkaBody(i, 1<<20+rand.IntN(3<<20+1))
				a := postHook(client, n.listen, tn, "big", body)
				if a.status != http.StatusCreated || a.err != nil {
					errs <- fmt.Errorf("hook %d (%d bytes): %v", i, len(body), a)
					return
				}
				mu.Lock()
				sent[a.id] = claimKafkaSent{tenant: tn, sum: sha256.Sum256(body), size: len(body)}
				total += int64(len(body))
				mu.Unlock()
			}
		})
	}
	for i := range hooks {
		select {
		case next <- i:
		case err := <-errs:
			t.Fatal(err)
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	ingested := time.Since(began)

	// Consume: every hook once, each message under the limit, each claim
	// resolving to the exact body.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("hooks"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]envelope.Claim{}
	var largest int
	deadline := time.Now().Add(10 * time.Minute)
	for len(got) < hooks {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d hooks in the topic after 10 minutes:\n%s", len(got), hooks, tail(p.stderr.String(), 3000))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			size := len(r.Key) + len(r.Value)
			for _, h := range r.Headers {
				size += len(h.Key) + len(h.Value)
			}
			largest = max(largest, size)
			if size >= claimKafkaLimit {
				bad = fmt.Errorf("a record of %d bytes: not under the broker's limit of %d", size, claimKafkaLimit)
			}
			var e envelope.Envelope
			if err := e.UnmarshalJSON(r.Value); err != nil {
				bad = fmt.Errorf("a record is not the envelope JSON form: %v", err)
				return
			}
			if e.BodyClaim == nil {
				bad = fmt.Errorf("hook %s (%d bytes) was delivered without a claim", e.ID, sent[e.ID.String()].size)
				return
			}
			got[e.ID.String()] = *e.BodyClaim
		})
		if bad != nil {
			t.Fatal(bad)
		}
	}
	delivered := time.Since(began)
	packs := claimKafkaPacks(t, store)
	for id, s := range sent {
		ref, ok := got[id]
		if !ok {
			t.Fatalf("hook %s answered 201 is not in the topic", id)
		}
		if want := "claims/tenant=" + s.tenant + "/source=big/"; !strings.HasPrefix(ref.Key, want) {
			t.Fatalf("hook %s of tenant %s: claim key %q is not under %q", id, s.tenant, ref.Key, want)
		}
		if err := claimKafkaResolve(store, ref, s.sum); err != nil {
			t.Fatalf("hook %s: %v", id, err)
		}
	}
	// A few through the admin API and the command, as an operator would.
	checked := 0
	for id, s := range sent {
		if checked++; checked > 5 {
			break
		}
		ref := got[id]
		code, out, stderr := runBin(t, n.dir, "claim", "get", "-config", n.config, string(ref.AppendJSON(nil)))
		if code != 0 || sha256.Sum256([]byte(out)) != s.sum {
			t.Fatalf("ankusa claim get %s: exit %d, %d bytes (want %d):\n%s", id, code, len(out), s.size, stderr)
		}
	}

	// Delete one tenant's claims: exactly its packs go.
	victim := "t1" // t10..t19 share its first letters
	code, out, stderr := runBin(t, n.dir, "claim", "delete", "-config", n.config, "-tenant", victim)
	if code != 0 {
		t.Fatalf("ankusa claim delete -tenant %s: exit %d\n%s%s", victim, code, out, stderr)
	}
	after := claimKafkaPacks(t, store)
	for tn, keys := range packs {
		switch {
		case tn == victim && len(after[tn]) != 0:
			t.Fatalf("tenant %s's claims were deleted, yet %d of its packs are left", tn, len(after[tn]))
		case tn != victim && len(after[tn]) != len(keys):
			t.Fatalf("deleting tenant %s's claims changed tenant %s's packs: %d, was %d", victim, tn, len(after[tn]), len(keys))
		}
	}
	for id, s := range sent {
		err := claimKafkaResolve(store, got[id], s.sum)
		if (s.tenant == victim) != (err != nil) {
			t.Fatalf("after deleting %s's claims, hook %s of %s resolves: %v", victim, id, s.tenant, err)
		}
	}
	nPacks := 0
	for _, keys := range packs {
		nPacks += len(keys)
	}
	t.Logf("%d hooks, %.1f GiB of bodies (1-4 MiB) over %d tenants: ingested in %v, all in the topic after %v; largest record %d bytes (limit %d); %d packs (%.1f hooks a pack); every claim resolves to its body; deleting %s's claims removed its %d packs and no other (%s)",
		hooks, float64(total)/(1<<30), tenants, ingested.Round(time.Millisecond), delivered.Round(time.Millisecond), largest, claimKafkaLimit,
		nPacks, float64(hooks)/float64(max(nPacks, 1)), victim, len(packs[victim]), strings.TrimSpace(out))
}

// claimKafkaBody is a body of size bytes of words, its first line naming
// the hook, so that no two are alike.
func claimKafkaBody(i, size int) []byte {
	words := []string{"order", "paid", "customer", "amount", "currency", "line_item", "refund", "shipped", "invoice", "status"}
	b := bytes.NewBuffer(make([]byte, 0, size+16))
	fmt.Fprintf(b, "{\"hook\":%d,\"seed\":%d,\"text\":\"", i, rand.Uint64())
	for b.Len() < size-2 {
		b.WriteString(words[rand.IntN(len(words))])
		b.WriteByte(' ')
	}
	b.Truncate(size - 2)
	b.WriteString("\"}")
	return b.Bytes()
}

// claimKafkaResolve reads the claim from the dir store as a consumer
// would from the bucket (one ranged read) and checks it.
func claimKafkaResolve(store string, c envelope.Claim, want [sha256.Size]byte) error {
	f, err := os.Open(filepath.Join(store, filepath.FromSlash(c.Key)))
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, c.Length)
	if _, err := f.ReadAt(buf, c.Offset); err != nil {
		return fmt.Errorf("%s [%d, +%d): %w", c.Key, c.Offset, c.Length, err)
	}
	sum := sha256.Sum256(buf)
	if sum != want || hex.EncodeToString(sum[:]) != c.SHA256 {
		return fmt.Errorf("%s [%d, +%d): sha256 %x, want %x (claim says %s)", c.Key, c.Offset, c.Length, sum, want, c.SHA256)
	}
	return nil
}

// claimKafkaPacks lists the packs in the dir store by tenant.
func claimKafkaPacks(t *testing.T, store string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	root := filepath.Join(store, "claims")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		tn, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		out[strings.TrimPrefix(tn, "tenant=")] = append(out[strings.TrimPrefix(tn, "tenant=")], rel)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}
