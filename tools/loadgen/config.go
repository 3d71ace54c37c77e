package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ankusa/ankusa/tools/loadgen/payload"
)

// Config is one load run as the flags describe it. parseFlags fills and
// validates it; Run only reads it.
type Config struct {
	URL          string          // -url, with {tenant} and {source} placeholders
	Conns        int             // -c
	Rate         float64         // -rate; 0 = closed loop
	Duration     time.Duration   // -d; ignored when Requests > 0
	Requests     int64           // -n; 0 = run for Duration
	Warmup       time.Duration   // -warmup
	Sizes        payload.SizeMix // -size
	Kind         string          // -kind: stripe, github or mixed
	Sign         string          // -sign: none, stripe, github or standardwebhooks
	Secret       string          // -secret
	Tenants      int             // -tenants
	TenantDist   string          // -tenant-dist: uniform or zipf
	TenantPrefix string          // -tenant-prefix
	Sources      []string        // -sources
	Timeout      time.Duration   // -timeout, per request
	JSON         bool            // -json
	AckedPath    string          // -acked
	SentPath     string          // -sent
	MaxErrors    int64           // -max-errors; 0 = never stop on errors
	CPUProfile   string          // -cpuprofile
	Spin         time.Duration   // -spin
	Engine       string          // -engine: go or epoll

	// PoolPerClass caps the bodies generated per size class (0: the
	// default of payload.NewPool). Tests lower it.
	PoolPerClass int

	tmpl *urlTemplate // compiled URL
}

// Open reports whether the run is open loop.
func (c *Config) Open() bool { return c.Rate > 0 }

// Mode is "open" or "closed".
func (c *Config) Mode() string {
	if c.Open() {
		return "open"
	}
	return "closed"
}

var errHelp = flag.ErrHelp

// Accepted values of the enumerated flags.
var (
	kinds       = payload.Kinds
	signModes   = payload.SignModes
	tenantDists = []string{"uniform", "zipf"}
	engines     = []string{"go", "epoll"}
)

// parseFlags parses the command line into a validated Config. Usage and
// flag package errors go to stderr; the returned error says what is wrong.
func parseFlags(args []string, stderr io.Writer) (*Config, error) {
	c := &Config{}
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var size, sources string
	fs.StringVar(&c.URL, "url", "", "target `URL`, with optional {tenant} and {source} placeholders (required)")
	fs.IntVar(&c.Conns, "c", 64, "connections: closed-loop workers, or the open-loop pool")
	fs.Float64Var(&c.Rate, "rate", 0, "open-loop requests per second on a fixed schedule (0 = closed loop)")
	fs.DurationVar(&c.Duration, "d", 10*time.Second, "measured duration")
	fs.Int64Var(&c.Requests, "n", 0, "stop after `N` measured requests instead of -d")
	fs.DurationVar(&c.Warmup, "warmup", time.Second, "warm-up before the measured window, excluded from figures and -acked")
	fs.StringVar(&size, "size", "1KiB", "body size: 1KiB, 512, or a mix like 70%1KiB,25%8KiB,5%64KiB")
	fs.StringVar(&c.Kind, "kind", "stripe", "payload shape: stripe, github or mixed")
	fs.StringVar(&c.Sign, "sign", "none", "signature: none, stripe, github or standardwebhooks")
	fs.StringVar(&c.Secret, "secret", "", "signing secret (standardwebhooks: whsec_ followed by base64)")
	fs.IntVar(&c.Tenants, "tenants", 1, "number of tenants substituted for {tenant}")
	fs.StringVar(&c.TenantDist, "tenant-dist", "uniform", "tenant distribution: uniform or zipf")
	fs.StringVar(&c.TenantPrefix, "tenant-prefix", "t", "tenant name prefix (names are prefix+index)")
	fs.StringVar(&sources, "sources", "demo", "comma-separated sources substituted for {source}, picked uniformly")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Second, "per-request timeout")
	fs.BoolVar(&c.JSON, "json", false, "print the summary as one JSON object")
	fs.StringVar(&c.AckedPath, "acked", "", "append \"<id> <sha256 of body>\" for every measured 201 to `FILE`")
	fs.StringVar(&c.SentPath, "sent", "", "open loop: write \"<sha256 of body> <due ns> <answered ns> <status>\" for every measured request to `FILE` (truncated)")
	fs.DurationVar(&c.Spin, "spin", 0, "after each send, poll for the answer this long before parking (removes the runtime's wake-up latency at low rates; costs a spinning core)")
	fs.StringVar(&c.Engine, "engine", "go", "client engine: go (a goroutine per connection) or epoll (Linux, open loop: one epoll loop over non-blocking sockets, as wrk; needs -rate, plain http)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write loadgen's own CPU profile (pprof) to `FILE`")
	fs.Int64Var(&c.MaxErrors, "max-errors", 0, "exit 1 after `N` transport errors (0 = never)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (every option is a flag; see -h)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["d"] && set["n"] {
		return nil, errors.New("-d and -n both given: the window is a duration or a request count, not both")
	}
	mix, err := payload.ParseSizeMix(size)
	if err != nil {
		return nil, fmt.Errorf("-size %q: %w", size, err)
	}
	c.Sizes = mix
	c.Sources = splitList(sources)
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// validate checks every field and compiles the URL template.
func (c *Config) validate() error {
	checks := []func() error{c.validateLoad, c.validatePayload, c.validateSign, c.validateTargets}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validateLoad() error {
	switch {
	case c.Conns < 1:
		return fmt.Errorf("-c %d: need at least one connection", c.Conns)
	case c.Rate < 0:
		return fmt.Errorf("-rate %g: must be 0 (closed loop) or a positive number of requests per second", c.Rate)
	case c.Requests < 0:
		return fmt.Errorf("-n %d: must be positive", c.Requests)
	case c.Requests == 0 && c.Duration <= 0:
		return fmt.Errorf("-d %v: the measured duration must be positive", c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("-warmup %v: must be 0 or positive", c.Warmup)
	case c.Timeout <= 0:
		return fmt.Errorf("-timeout %v: must be positive", c.Timeout)
	case c.Spin < 0 || c.Spin >= c.Timeout:
		return fmt.Errorf("-spin %v: must be 0 (park at once) or a positive duration below -timeout", c.Spin)
	case c.MaxErrors < 0:
		return fmt.Errorf("-max-errors %d: must be 0 (never) or positive", c.MaxErrors)
	}
	return c.validateEngine()
}

func (c *Config) validateEngine() error {
	switch {
	case !slices.Contains(engines, c.Engine):
		return fmt.Errorf("-engine %q: must be go or epoll", c.Engine)
	case c.SentPath != "" && !c.Open():
		return errors.New("-sent records each request's scheduled send time: give -rate (open loop)")
	case c.Engine == "go":
		return nil
	case !epollSupported:
		return fmt.Errorf("-engine epoll: needs Linux (epoll, timerfd); this is %s", runtime.GOOS)
	case !c.Open():
		return errors.New("-engine epoll is an open-loop engine: give -rate")
	case c.Spin > 0:
		return errors.New("-spin is the go engine's: the epoll engine never parks a reader")
	case c.SentPath != "":
		return errors.New("-sent is the go engine's: give -engine go")
	}
	return nil
}

func (c *Config) validatePayload() error {
	if !slices.Contains(kinds, c.Kind) {
		return fmt.Errorf("-kind %q: must be one of %s", c.Kind, strings.Join(kinds, ", "))
	}
	return nil
}

func (c *Config) validateSign() error {
	if !slices.Contains(signModes, c.Sign) {
		return fmt.Errorf("-sign %q: must be one of %s", c.Sign, strings.Join(signModes, ", "))
	}
	if c.Sign == "none" {
		if c.Secret != "" {
			return errors.New("-secret given without -sign: say which provider's scheme to sign with")
		}
		return nil
	}
	if c.Secret == "" {
		return fmt.Errorf("-sign %s needs -secret", c.Sign)
	}
	if c.Sign == "standardwebhooks" {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(c.Secret, "whsec_"))
		if err != nil || len(raw) == 0 {
			return errors.New("-secret: a standardwebhooks secret is whsec_ followed by base64")
		}
	}
	return nil
}

func (c *Config) validateTargets() error {
	switch {
	case c.Tenants < 1:
		return fmt.Errorf("-tenants %d: need at least one tenant", c.Tenants)
	case !slices.Contains(tenantDists, c.TenantDist):
		return fmt.Errorf("-tenant-dist %q: must be uniform or zipf", c.TenantDist)
	case len(c.Sources) == 0:
		return errors.New("-sources: need at least one source name")
	case c.URL == "":
		return errors.New("-url is required (e.g. -url 'http://127.0.0.1:8080/webhooks/{tenant}/{source}')")
	}
	tmpl, err := compileURL(c.URL, c.TenantPrefix+"0", c.Sources[0])
	if err != nil {
		return fmt.Errorf("-url %q: %w", c.URL, err)
	}
	if tmpl.tls && c.Engine == "epoll" {
		return fmt.Errorf("-url %q: the epoll engine speaks plain http only (use -engine go for https)", c.URL)
	}
	c.tmpl = tmpl
	return nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
