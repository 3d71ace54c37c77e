package cli

import (
	"flag"
	"fmt"
	"os"

	"github.com/ankusa/ankusa/admin"
	"github.com/ankusa/ankusa/config"
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
		// quarantine and accept_flag arrive with the quarantine pen.
		OnVerifyFailure: []string{"reject"},
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
	if err != nil {
		return cfg, err
	}
	// A registered resolver validates its own options when it is built:
	// build it here, so check-config and serve refuse the same configs.
	if _, err := edge.NewResolver(cfg.RouteResolver); err != nil {
		return cfg, config.Problems{fmt.Sprintf("route_resolver: %v", err)}
	}
	// The admin API checks its tokens' scopes (names, duplicates) when it
	// is built: the same check here, for the same reason.
	if err := admin.ValidateTokens(cfg.Admin.Tokens); err != nil {
		return cfg, config.Problems{err.Error()}
	}
	return cfg, nil
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
