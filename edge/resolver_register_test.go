package edge_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
)

// registerSeq makes the names of test resolvers unique in the process: the
// registry is global and never forgets, and -count=N runs a test N times.
var registerSeq atomic.Int64

// uniqueName is a resolver name no other registration uses.
func uniqueName(t *testing.T) string {
	return fmt.Sprintf("test-register-%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), registerSeq.Add(1))
}

// fixedResolver resolves every request to one source; the factory that
// built it leaves the config it was given in cfg.
type fixedResolver struct {
	source string
	cfg    config.RouteResolver
}

func (r *fixedResolver) Resolve(*fasthttp.RequestHeader, *edge.Snapshot) (edge.Route, bool) {
	return edge.Route{SourceID: r.source}, true
}

// mustPanic runs f and returns the value it panicked with.
func mustPanic(t *testing.T, what string, f func()) (v any) {
	t.Helper()
	defer func() {
		v = recover()
		if v == nil {
			t.Fatalf("%s did not panic", what)
		}
	}()
	f()
	return nil
}

func TestRegisterResolver(t *testing.T) {
	name := uniqueName(t)
	if edge.ResolverKnown(name) || slices.Contains(edge.Resolvers(), name) {
		t.Fatalf("%q is known before it is registered", name)
	}
	built := 0
	edge.RegisterResolver(name, func(cfg config.RouteResolver) (edge.Resolver, error) {
		built++
		return &fixedResolver{source: "demo", cfg: cfg}, nil
	})
	if !edge.ResolverKnown(name) {
		t.Fatalf("ResolverKnown(%q) is false after RegisterResolver", name)
	}
	names := edge.Resolvers()
	if !slices.IsSorted(names) {
		t.Errorf("Resolvers() = %v, not sorted", names)
	}
	for _, want := range []string{"host", "path", "tenantpath", "token", name} {
		if !slices.Contains(names, want) {
			t.Errorf("Resolvers() = %v, missing %q", names, want)
		}
	}
	if built != 0 {
		t.Fatalf("the factory ran %d times at registration; it runs only when a resolver is built", built)
	}

	// NewResolver hands the whole route_resolver section to the factory and
	// returns what it built, once per call.
	cfg := config.RouteResolver{Type: name, Prefix: []string{"in", "hooks"}, Options: map[string]string{"k": "v"}}
	r, err := edge.NewResolver(cfg)
	if err != nil {
		t.Fatalf("NewResolver(%q): %v", name, err)
	}
	fr, ok := r.(*fixedResolver)
	if !ok {
		t.Fatalf("NewResolver(%q) = %T, want the factory's *fixedResolver", name, r)
	}
	if fr.cfg.Type != name || !slices.Equal(fr.cfg.Prefix, cfg.Prefix) || fr.cfg.Options["k"] != "v" {
		t.Fatalf("the factory got %+v, want %+v", fr.cfg, cfg)
	}
	if route, ok := r.Resolve(&fasthttp.RequestHeader{}, nil); !ok || route.SourceID != "demo" {
		t.Fatalf("the built resolver answers %+v %v", route, ok)
	}
	if _, err := edge.NewResolver(cfg); err != nil || built != 2 {
		t.Fatalf("second NewResolver: %v, factory ran %d times, want 2", err, built)
	}

	// Validation accepts the registered name through ResolverKnown, as the
	// binary wires it.
	yaml := "route_resolver: {type: " + name + "}\nrate_limits: {default: {rate: 1, burst: 1}}\n"
	if _, err := config.Load([]byte(yaml), config.ValidateOptions{ResolverKnown: edge.ResolverKnown}); err != nil {
		t.Fatalf("a config naming the registered resolver does not load: %v", err)
	}
}

// Registering a name twice is a broken program, not an operator's mistake:
// it panics with a BUG: message naming the resolver, and the first
// registration stays.
func TestRegisterResolverTwicePanics(t *testing.T) {
	name := uniqueName(t)
	first := func(config.RouteResolver) (edge.Resolver, error) { return &fixedResolver{source: "first"}, nil }
	second := func(config.RouteResolver) (edge.Resolver, error) { return &fixedResolver{source: "second"}, nil }
	edge.RegisterResolver(name, first)
	v := mustPanic(t, "a second RegisterResolver("+name+")", func() { edge.RegisterResolver(name, second) })
	msg, _ := v.(string)
	if !strings.HasPrefix(msg, "BUG: ") || !strings.Contains(msg, name) {
		t.Fatalf("panic %v (%T), want a string starting BUG: that names %q", v, v, name)
	}
	r, err := edge.NewResolver(config.RouteResolver{Type: name})
	if err != nil {
		t.Fatal(err)
	}
	if route, _ := r.Resolve(&fasthttp.RequestHeader{}, nil); route.SourceID != "first" {
		t.Fatalf("after the refused registration %q builds %q's resolver, want the first", name, route.SourceID)
	}
	for _, builtin := range []string{"path", "tenantpath", "host", "token"} {
		v := mustPanic(t, "RegisterResolver("+builtin+")", func() { edge.RegisterResolver(builtin, first) })
		if msg, _ := v.(string); !strings.HasPrefix(msg, "BUG: ") || !strings.Contains(msg, builtin) {
			t.Fatalf("re-registering %q panicked with %v, want BUG: naming it", builtin, v)
		}
	}
}

// An unknown type is an operator's mistake: an error that names the config
// key, the type asked for and every registered one.
func TestNewResolverUnknown(t *testing.T) {
	name := uniqueName(t)
	edge.RegisterResolver(name, func(config.RouteResolver) (edge.Resolver, error) { return &fixedResolver{}, nil })
	for _, typ := range []string{"nope", "", "PATH", name + "x"} {
		r, err := edge.NewResolver(config.RouteResolver{Type: typ})
		if err == nil {
			t.Fatalf("NewResolver(%q) built %T, want an error", typ, r)
		}
		msg := err.Error()
		if r != nil || !strings.Contains(msg, "route_resolver.type") || !strings.Contains(msg, fmt.Sprintf("%q", typ)) {
			t.Errorf("NewResolver(%q) = %v, %q; want nil and an error naming route_resolver.type and %q", typ, r, msg, typ)
		}
		for _, known := range edge.Resolvers() {
			if !strings.Contains(msg, known) {
				t.Errorf("NewResolver(%q): %q does not list registered resolver %q", typ, msg, known)
			}
		}
		if edge.ResolverKnown(typ) {
			t.Errorf("ResolverKnown(%q) is true", typ)
		}
	}
}

// A factory's error (bad options, an unreadable table) comes back as it
// is, so callers can test for it and the operator reads the factory's words.
func TestNewResolverFactoryError(t *testing.T) {
	name := uniqueName(t)
	errBadOptions := errors.New("route_resolver.options.table: cannot read /nope")
	var got config.RouteResolver
	edge.RegisterResolver(name, func(cfg config.RouteResolver) (edge.Resolver, error) {
		got = cfg
		return nil, fmt.Errorf("test resolver: %w", errBadOptions)
	})
	cfg := config.RouteResolver{Type: name, Options: map[string]string{"table": "/nope"}}
	r, err := edge.NewResolver(cfg)
	if !errors.Is(err, errBadOptions) || r != nil {
		t.Fatalf("NewResolver = %v, %v; want nil and the factory's error", r, err)
	}
	if !strings.Contains(err.Error(), "route_resolver.options.table") {
		t.Fatalf("error %q lost the factory's message", err)
	}
	if got.Options["table"] != "/nope" {
		t.Fatalf("the factory got options %v", got.Options)
	}
	if !edge.ResolverKnown(name) {
		t.Fatalf("a factory error unregistered %q", name)
	}
}

// The registry is safe for concurrent use: registrations, lookups, listings
// and builds race freely (go test -race checks it).
func TestRegistryConcurrent(t *testing.T) {
	base := uniqueName(t)
	const n = 16
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", base, i)
		wg.Add(2)
		go func() {
			defer wg.Done()
			edge.RegisterResolver(name, func(config.RouteResolver) (edge.Resolver, error) {
				return &fixedResolver{source: name}, nil
			})
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				_ = edge.ResolverKnown(name)
				_ = edge.Resolvers()
				if r, err := edge.NewResolver(config.RouteResolver{Type: name}); err == nil {
					if route, _ := r.Resolve(&fasthttp.RequestHeader{}, nil); route.SourceID != name {
						t.Errorf("%s built a resolver for %q", name, route.SourceID)
					}
				}
			}
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if name := fmt.Sprintf("%s-%d", base, i); !edge.ResolverKnown(name) {
			t.Errorf("%s was registered concurrently and is not known", name)
		}
	}
}
