package natssink

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/ankusa/ankusa/config"
)

// clientTLS is a stand-in, replaced by config.TLS.ClientConfig at merge
// (the Kafka sink's branch adds it to config/tls.go with this signature
// and meaning). It is kept minimal: the CA file, a client certificate,
// the server name and insecure_skip_verify.
func clientTLS(t *config.TLS) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // the operator's choice, named in the config
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file: %s holds no PEM certificate", t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file, tls.key_file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
