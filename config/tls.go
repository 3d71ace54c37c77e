package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ClientConfig builds the client TLS config of a broker sink (Kafka,
// NATS) from t: the CA file's certificates replace the system pool, a
// client certificate is loaded for mutual TLS, ServerName and
// InsecureSkipVerify are copied. A nil t is no TLS: (nil, nil). It reads
// the files each time it is called (a sink calls it once, when built);
// errors name the key (tls.ca_file, tls.cert_file) and the file. The
// config asks for TLS 1.2 at least.
func (t *TLS) ClientConfig() (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // the operator's explicit choice (tls.insecure_skip_verify)
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: cannot read %q: %w", t.CAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file: %q holds no PEM certificate", t.CAFile)
		}
		c.RootCAs = pool
	}
	switch {
	case t.CertFile != "" && t.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file, tls.key_file: cannot load the client certificate %q with key %q: %w", t.CertFile, t.KeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	case t.CertFile != "" || t.KeyFile != "":
		return nil, fmt.Errorf("tls: cert_file and key_file go together (a client certificate and its key)")
	}
	return c, nil
}
