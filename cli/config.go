package cli

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/ankusa/ankusa/admin"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/verify"
)

// validateOptions is what config validation needs from the rest of the
// binary: which resolvers are registered and which verifiers are built.
func validateOptions() config.ValidateOptions {
	return config.ValidateOptions{
		ResolverKnown: edge.ResolverKnown,
		CheckVerify: func(v config.Verify) error {
			_, err := verify.New(v)
			return err
		},
		CheckDedupe: func(key, verifierType string) error {
			_, err := dedupe.NewExtractor(key, verifierType)
			return err
		},
	}
}

// loadConfig loads path, or the embedded default when path is empty.
func loadConfig(path string) (*config.Config, error) {
	var cfg *config.Config
	var err error
	if path == "" {
		cfg, err = config.Load(config.DefaultYAML(), validateOptions())
	} else {
		cfg, err = config.LoadFile(path, validateOptions())
	}
	// Validation problems come back with the parsed config: the checks
	// below run too, so that every problem is reported at once.
	var probs config.Problems
	if err != nil {
		p, ok := err.(config.Problems)
		if !ok || cfg == nil {
			return cfg, err
		}
		probs = p
	}
	// A registered resolver validates its own options when it is built:
	// build it here, so check-config and serve refuse the same configs.
	// (A key the schema already refused is not reported twice.)
	if _, err := edge.NewResolver(cfg.RouteResolver); err != nil && !problemAt(probs, "route_resolver") {
		probs = append(probs, fmt.Sprintf("route_resolver: %v", err))
	}
	// The admin API checks its tokens' scopes (names, duplicates) when it
	// is built: the same check here, for the same reason.
	if err := admin.ValidateTokens(cfg.Admin.Tokens); err != nil {
		errs := []error{err}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			errs = joined.Unwrap()
		}
		known := probs
		for _, e := range errs {
			// "admin.tokens[1] (ci): ..." is not repeated when the schema
			// already named admin.tokens[1].
			msg := e.Error()
			key, _, _ := strings.Cut(msg, " ")
			if !problemAt(known, key) {
				probs = append(probs, msg)
			}
		}
	}
	if len(probs) > 0 {
		return cfg, probs
	}
	return cfg, nil
}

// problemAt reports whether a problem about key (or a key below it) is
// already in probs.
func problemAt(probs config.Problems, key string) bool {
	for _, p := range probs {
		if strings.HasPrefix(p, key+":") || strings.HasPrefix(p, key+".") || strings.HasPrefix(p, key+" ") || strings.HasPrefix(p, key+"[") {
			return true
		}
	}
	return false
}

func checkConfig(args []string) int {
	fs := flag.NewFlagSet("check-config", flag.ContinueOnError)
	path := fs.String("config", "", "config file (default: the embedded default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	_, err := loadConfig(*path)
	if err != nil {
		printProblems(err)
		return exitConfig
	}
	fmt.Println("config ok")
	return 0
}

func printProblems(err error) {
	if probs, ok := err.(config.Problems); ok {
		for _, p := range probs {
			fmt.Fprintln(os.Stderr, "config:", p)
		}
		return
	}
	fmt.Fprintln(os.Stderr, "config:", err)
}
