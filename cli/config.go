package cli

import (
	"flag"
	"fmt"
	"os"

	"github.com/ankusa/ankusa/admin"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/dispatch/sink/amqpsink"
	"github.com/ankusa/ankusa/dispatch/sink/filesink"
	"github.com/ankusa/ankusa/dispatch/sink/httpsink"
	"github.com/ankusa/ankusa/dispatch/sink/kafkasink"
	"github.com/ankusa/ankusa/dispatch/sink/natssink"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/filter"
	"github.com/ankusa/ankusa/verify"
)

// validateOptions is what config validation needs from the rest of the
// binary: which resolvers are registered, and the checks that the stages
// make when they are built, so that check-config and serve refuse the same
// configs.
// sourceContext is what a source written at runtime is validated against:
// the node's settings and the build's checks, as the file's sources are.
func sourceContext(cfg *config.Config) config.SourceContext {
	return config.SourceContext{
		Resolver: cfg.RouteResolver.Type, WALType: cfg.WAL.Type, DedupeScope: cfg.Dedupe.Scope,
		ClaimStores: cfg.ClaimStoreNames(), Runtime: true, ValidateOptions: validateOptions(),
	}
}

func validateOptions() config.ValidateOptions {
	return config.ValidateOptions{
		ResolverKnown: edge.ResolverKnown,
		VerifierKnown: verify.Known,
		CheckResolver: func(r config.RouteResolver) error {
			if _, err := edge.NewResolver(r); err != nil {
				return fmt.Errorf("route_resolver: %w", err)
			}
			return nil
		},
		CheckVerify: func(v config.Verify) error {
			_, err := verify.New(v)
			return err
		},
		CheckDedupe: func(key, verifierType string) error {
			_, err := dedupe.NewExtractorAuto(key, verifierType, verify.AutoDedupeKey, verify.AutoDedupeTypes())
			return err
		},
		CheckSink: func(s config.Sink) error {
			switch s.Type {
			case "http":
				return httpsink.Check(s)
			case "rabbitmq":
				return amqpsink.Check(s)
			case "kafka":
				return kafkasink.Check(s)
			case "nats":
				return natssink.Check(s)
			case "file":
				return filesink.Check(s)
			}
			return nil // config names an unknown type itself
		},
		// filter's errors begin with "filter: ", the key they are about;
		// Compile caches the program, so dispatch finds it compiled.
		CheckFilter: func(expr string) error {
			_, err := filter.Compile(expr)
			return err
		},
		RefusedTarget:    httpsink.RefusedHost,
		CheckAdminTokens: admin.ValidateTokens,
	}
}

// loadConfig loads path, or the embedded default when path is empty. The
// error, when not nil, names every problem (a config.Problems).
func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return config.Load(config.DefaultYAML(), validateOptions())
	}
	return config.LoadFile(path, validateOptions())
}

func checkConfig(args []string) int {
	fs := flag.NewFlagSet("check-config", flag.ContinueOnError)
	path := fs.String("config", "", "config file (default: the embedded default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		printProblems(err)
		return exitConfig
	}
	// A warning is for the operator to read; the config is still valid.
	for _, w := range config.Warnings(cfg) {
		fmt.Fprintln(os.Stderr, "config: warning:", w)
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
