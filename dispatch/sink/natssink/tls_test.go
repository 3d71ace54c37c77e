package natssink

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/internal/natstest"
)

// testPKI writes a CA and a server certificate for 127.0.0.1 (and the
// name nats.test) signed by it into dir and returns their paths.
func testPKI(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ankusa test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "nats.test"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), DNSNames: []string{"nats.test"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", der), write("server-key.pem", "EC PRIVATE KEY", keyDER)
}

// tls: the CA given by ca_file verifies the server; without it (the
// system's roots) or without tls against a TLS-only server the sink does
// not connect, retryably, saying why.
func TestTLS(t *testing.T) {
	t.Parallel()
	caFile, certFile, keyFile := testPKI(t, t.TempDir())
	srv := natstest.StartServer(t, natstest.ServerOptions{TLSCert: certFile, TLSKey: keyFile})
	u := "tls://" + srv.Addr()
	c := natstest.Connect(t, u, nats.RootCAs(caFile))
	stream, prefix := natstest.Names(t, u) // gone with the private server anyway
	c.CreateStream(jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"}, Storage: jetstream.FileStorage})
	subject := prefix + ".{tenant_id}"

	s := newSink(t, u, config.Sink{Stream: stream, Subject: subject, TLS: &config.TLS{CAFile: caFile}})
	e := testEnvelope()
	if err := deliver(s, e, 1); err != nil {
		t.Fatal(err)
	}
	// server_name: the certificate's DNS name, checked instead of the host
	// dialled.
	named := newSink(t, u, config.Sink{ID: "s-named", Stream: stream, Subject: subject, TLS: &config.TLS{CAFile: caFile, ServerName: "nats.test"}})
	if err := deliver(named, testEnvelope(), 1); err != nil {
		t.Fatalf("server_name nats.test: %v", err)
	}
	wrongName := newSink(t, u, config.Sink{ID: "s-wrong", Stream: stream, Subject: subject, TLS: &config.TLS{CAFile: caFile, ServerName: "other.test"}})
	noCA := newSink(t, u, config.Sink{ID: "s-noca", Stream: stream, Subject: subject, TLS: &config.TLS{}})
	for name, bad := range map[string]*Sink{"server_name other.test": wrongName, "no ca_file": noCA} {
		var err error
		if !waitForErr(func() bool {
			err = deliver(bad, testEnvelope(), 1)
			return err != nil && strings.Contains(err.Error(), "certificate")
		}) {
			t.Fatalf("%s: err = %v, want a retryable not connected naming the certificate", name, err)
		}
		if !errors.Is(err, ErrNotConnected) {
			t.Fatalf("%s: err = %v, want ErrNotConnected", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	plain := newSink(t, "nats://"+srv.Addr(), config.Sink{ID: "s-plain", Stream: stream, Subject: subject})
	if err := deliver(plain, testEnvelope(), 1); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("no tls against a TLS-only server: err = %v", err)
	}
	if ms := c.Msgs(stream, 2); len(ms) != 2 || ms[0].Header.Get(HeaderEventID) != e.ID.String() {
		t.Fatalf("stream holds %d messages", len(ms))
	}
}

// waitForErr polls cond for up to 3 s (a connection's last error arrives
// asynchronously).
func waitForErr(cond func() bool) bool {
	deadline := time.Now().Add(3 * time.Second)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
