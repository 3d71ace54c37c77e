package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTLSFiles writes a self-signed certificate and its key as PEM files
// and returns their paths.
func writeTLSFiles(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ankusa-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, DNSNames: []string{"broker.test"},
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestTLSClientConfig(t *testing.T) {
	certFile, keyFile := writeTLSFiles(t)
	if c, err := (*TLS)(nil).ClientConfig(); c != nil || err != nil {
		t.Fatalf("nil TLS: %v, %v; want no config", c, err)
	}

	c, err := (&TLS{CAFile: certFile, CertFile: certFile, KeyFile: keyFile, ServerName: "broker.test"}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.RootCAs == nil || len(c.Certificates) != 1 || c.ServerName != "broker.test" || c.InsecureSkipVerify || c.MinVersion == 0 {
		t.Fatalf("config %+v: want the CA pool, one client certificate, server name broker.test", c)
	}
	if c, err := (&TLS{InsecureSkipVerify: true}).ClientConfig(); err != nil || !c.InsecureSkipVerify || c.RootCAs != nil {
		t.Fatalf("insecure_skip_verify: %+v, %v", c, err)
	}

	for _, tc := range []struct {
		name string
		t    TLS
		want string
	}{
		{"missing CA", TLS{CAFile: filepath.Join(t.TempDir(), "nope.pem")}, "tls.ca_file: cannot read"},
		{"CA not PEM", TLS{CAFile: keyFile + ".x"}, "tls.ca_file"},
		{"key is no CA", TLS{CAFile: keyFile}, "holds no PEM certificate"},
		{"cert without key", TLS{CertFile: certFile}, "cert_file and key_file go together"},
		{"key is not the cert's", TLS{CertFile: keyFile, KeyFile: keyFile}, "tls.cert_file, tls.key_file: cannot load"},
	} {
		_, err := tc.t.ClientConfig()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
