package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The broker sinks' passwords and tokens and a claim store's keys take
// env: and file: references in the file, resolved at load; one that does
// not resolve is named by its path.
func TestBrokerSecretsResolve(t *testing.T) {
	t.Setenv("ANKUSA_TEST_KAFKA_PW", "kpw")
	t.Setenv("ANKUSA_TEST_UNSET", "")
	tokFile := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(tokFile, []byte("ntok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := `claims: {stores: {packs: {type: s3, endpoint: 'h:9000', bucket: b, access_key: env:ANKUSA_TEST_KAFKA_PW, secret_key: env:ANKUSA_TEST_UNSET}}}
sources:
  s:
    verify: {type: none}
    sinks:
      - {type: kafka, brokers: ["k:9092"], topic: t, sasl: {mechanism: plain, username: u, password: env:ANKUSA_TEST_KAFKA_PW}}
      - {type: nats, url: "nats://n:4222", stream: S, auth: {token: "file:` + tokFile + `"}}
      - {type: nats, url: "nats://n:4222", stream: T, auth: {username: u, password: env:ANKUSA_TEST_UNSET}}
`
	_, err := Load([]byte(yaml), ValidateOptions{})
	want := []string{
		"claims.stores.packs.secret_key: cannot resolve secret: environment variable ANKUSA_TEST_UNSET is not set",
		"sources.s.sinks[2].auth.password: cannot resolve secret: environment variable ANKUSA_TEST_UNSET is not set",
	}
	if err == nil {
		t.Fatal("unresolved references loaded")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("load: %v\nwant it to say %q", err, w)
		}
	}
	good := strings.ReplaceAll(yaml, "env:ANKUSA_TEST_UNSET", "env:ANKUSA_TEST_KAFKA_PW")
	cfg, err := Load([]byte(good), ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sinks := cfg.Sources["s"].Sinks
	if sinks[0].SASL.Password.Value != "kpw" || sinks[1].Auth.Token.Value != "ntok" || sinks[2].Auth.Password.Value != "kpw" ||
		cfg.Claims.Stores["packs"].SecretKey.Value != "kpw" {
		t.Fatalf("resolved: %q %q %q %q", sinks[0].SASL.Password.Value, sinks[1].Auth.Token.Value, sinks[2].Auth.Password.Value, cfg.Claims.Stores["packs"].SecretKey.Value)
	}
}
