package kafkasink

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
)

// refuseProduces answers the next n produce requests with code for every
// partition in them, as a broker refusing whole batches does.
func refuseProduces(c *kfake.Cluster, n int64, code int16) *atomic.Int64 {
	var refused atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if refused.Load() >= n {
			return nil, nil, false
		}
		refused.Add(1)
		req := kr.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return &refused
}

// A batch refused as a whole (MESSAGE_TOO_LARGE for the batch) fails the
// records in it; each is then produced alone, and those the broker takes
// alone are ok, not dead letters.
func TestRefusedBatchRetriedAlone(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(1, "batch"))
	s := newSink(t, c.ListenAddrs(), config.Sink{Topic: "batch"})
	if err := deliver(s, testEnvelope(), 1); err != nil { // metadata and producer id known
		t.Fatal(err)
	}
	solo0, acked0 := soloTotal.Get(), ackedTotal.Get()
	refused := refuseProduces(c, 1, kerr.MessageTooLarge.Code)
	es := make([]*envelope.Envelope, 10)
	errs := make([]error, len(es))
	var wg sync.WaitGroup
	for i := range es {
		es[i] = testEnvelope()
		wg.Go(func() { errs[i] = deliver(s, es[i], 1) })
	}
	wg.Wait()
	ids := map[string]bool{}
	for i, err := range errs {
		if err != nil {
			t.Errorf("hook %d: %v, want ok once produced alone", i, err)
		}
		ids[es[i].ID.String()] = true
	}
	if refused.Load() != 1 || soloTotal.Get()-solo0 < 1 || ackedTotal.Get()-acked0 < uint64(len(es)) {
		t.Fatalf("refused requests %d, solo retries %d, acked %d; want 1 refused batch, its records retried alone and all acked",
			refused.Load(), soloTotal.Get()-solo0, ackedTotal.Get()-acked0)
	}
	t.Logf("1 refused produce request: %d records retried alone", soloTotal.Get()-solo0)
	recs := consume(t, c.ListenAddrs(), "batch", 1+len(es))
	for _, r := range recs[1:] {
		if id := headers(t, r)[HeaderEventID]; !ids[id] {
			t.Fatalf("record %s is not one of the hooks", id)
		}
	}
}

// A solo retry waits for its turn at most until its attempt ends.
func TestSoloWaitBounded(t *testing.T) {
	t.Parallel()
	s := newSink(t, []string{"127.0.0.1:1"}, config.Sink{Topic: "x"})
	s.soloSem <- struct{}{} // another record is being produced alone
	r, bp, err := s.build(&dispatch.Delivery{Envelope: testEnvelope(), Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err, owned := s.produceAlone(ctx, r, bp)
	if took := time.Since(start); err == nil || !owned || classify(err) != classNoAck || took > time.Second {
		t.Fatalf("produceAlone with the turn taken: %v (owned %v, class %v) after %v; want a no-ack error at the attempt's end", err, owned, classify(err), took)
	}
}

// The tls keys reach the client: a cluster that listens with TLS takes
// the sink's records when tls.ca_file names its CA, and refuses a sink
// without it.
func TestTLS(t *testing.T) {
	t.Parallel()
	caFile, serverCert := kafkaTestCert(t)
	c := newCluster(t, kfake.SeedTopics(1, "secure"), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}))
	s := newSink(t, c.ListenAddrs(), config.Sink{Topic: "secure", TLS: &config.TLS{CAFile: caFile}})
	e := testEnvelope()
	if err := deliver(s, e, 1); err != nil {
		t.Fatal(err)
	}
	// The consumer of the test dials with the same TLS config.
	tc, err := (&config.TLS{CAFile: caFile}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	r := consumeWith(t, c.ListenAddrs(), "secure", 1, kgo.DialTLSConfig(tc))[0]
	if headers(t, r)[HeaderEventID] != e.ID.String() {
		t.Fatalf("record %v", headers(t, r))
	}
	wrongName := newSink(t, c.ListenAddrs(), config.Sink{Topic: "secure", Timeout: config.Duration(1500 * time.Millisecond),
		TLS: &config.TLS{CAFile: caFile, ServerName: "not-the-broker.test"}})
	err = deliver(wrongName, testEnvelope(), 1)
	if de := asError(t, err); de.Permanent || de.Answered {
		t.Fatalf("wrong server name: %v, want retryable and not answered", err)
	}
	t.Logf("wrong server name: %v", err)
}

// kafkaTestCert writes a self-signed CA certificate for 127.0.0.1 and
// returns its file and the certificate with its key, for the brokers.
func kafkaTestCert(t *testing.T) (string, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kfake"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, cert
}
