package config

import (
	"strings"
	"testing"
)

// The redis source store takes its url and namespace from redis: when it
// names none, and its tick_ms defaults; what it names itself wins.
func TestRedisSourceStoreDefaults(t *testing.T) {
	base := "route_resolver: {type: tenantpath}\nrate_limits: {default: {rate: 1, burst: 1}}\n"
	for _, c := range []struct {
		yaml          string
		url, ns       string
		tick          int
		wantProblemOn string
	}{
		{yaml: "redis: {url: \"redis://10.0.0.5:6379/1\", namespace: \"fleet:\"}\nsource_store: {type: redis}", url: "redis://10.0.0.5:6379/1", ns: "fleet:", tick: DefaultSourceStoreTickMs},
		{yaml: "redis: {url: \"redis://10.0.0.5:6379/1\"}\nsource_store: {type: redis, url: \"redis://10.0.0.6:6379/0\", namespace: \"s:\", tick_ms: 50}", url: "redis://10.0.0.6:6379/0", ns: "s:", tick: 50},
		{yaml: "source_store: {type: redis, url: \"redis://h:6379/0\"}", url: "redis://h:6379/0", ns: "ankusa:", tick: DefaultSourceStoreTickMs},
		{yaml: "source_store: {type: redis}", wantProblemOn: "source_store.url: required"},
		{yaml: "source_store: {type: redis, url: \"redis://u:hunter2@h:6379/0\", tick_ms: 70000}", wantProblemOn: "source_store.tick_ms: 70000"},
		{yaml: "source_store: {type: redis, url: \"http://u:hunter2@h/\"}", wantProblemOn: "source_store.url: \"http://u:redacted@h/\" is not a redis://"},
		{yaml: "source_store: {type: persistent, tick_ms: 5}", wantProblemOn: "source_store.tick_ms: only the redis store takes it"},
	} {
		cfg, err := Load([]byte(base+c.yaml), ValidateOptions{})
		if c.wantProblemOn != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantProblemOn) {
				t.Errorf("%s: got %v, want a problem %q", c.yaml, err, c.wantProblemOn)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%s: the problem shows the URL's password: %v", c.yaml, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.yaml, err)
			continue
		}
		if s := cfg.SourceStore; s.URL != c.url || s.Namespace != c.ns || s.TickMs != c.tick {
			t.Errorf("%s: source_store %+v, want url %s namespace %s tick_ms %d", c.yaml, s, c.url, c.ns, c.tick)
		}
	}
}
