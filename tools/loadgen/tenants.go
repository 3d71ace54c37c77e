package main

import (
	"math/rand/v2"
	"strconv"
)

// zipfS and zipfV shape -tenant-dist zipf: P(tenant k) is proportional to
// 1/(v+k)^s, so with 1000 tenants t0 draws about 18% of requests, t1 about
// 8%, and the last tenants about one request in ten thousand each.
const (
	zipfS = 1.1
	zipfV = 1
)

// targets names the tenants and sources of a run. It is immutable and
// shared by every worker.
type targets struct {
	tenants []string
	sources []string
	zipf    bool
}

func newTargets(c *Config) *targets {
	t := &targets{sources: c.Sources, zipf: c.TenantDist == "zipf"}
	t.tenants = make([]string, c.Tenants)
	for i := range t.tenants {
		t.tenants[i] = c.TenantPrefix + strconv.Itoa(i)
	}
	return t
}

// targetPicker draws tenants and sources for one worker. Not safe for
// concurrent use: each worker has its own, over its own rand.
type targetPicker struct {
	t    *targets
	r    *rand.Rand
	zipf *rand.Zipf
}

func (t *targets) picker(r *rand.Rand) *targetPicker {
	p := &targetPicker{t: t, r: r}
	if t.zipf && len(t.tenants) > 1 {
		p.zipf = rand.NewZipf(r, zipfS, zipfV, uint64(len(t.tenants)-1))
	}
	return p
}

// tenant draws a tenant index.
func (p *targetPicker) tenant() int {
	switch {
	case len(p.t.tenants) == 1:
		return 0
	case p.zipf != nil:
		return int(p.zipf.Uint64())
	}
	return p.r.IntN(len(p.t.tenants))
}

// pick draws a tenant and a source name.
func (p *targetPicker) pick() (tenant, source string) {
	tenant = p.t.tenants[p.tenant()]
	source = p.t.sources[0]
	if len(p.t.sources) > 1 {
		source = p.t.sources[p.r.IntN(len(p.t.sources))]
	}
	return tenant, source
}
