// Command opaquetoken is the ankusa appliance with one more catch-URL
// scheme: opaque per-integration tokens,
//
//	POST /webhooks/catch/:app_id/:token
//
// It is the whole recipe for a program with its own URL scheme: implement
// edge.Resolver, register it by name, then hand the command line to
// cli.Main. Everything else (serve, check-config, inspect wal, the WAL, the
// admin listener) is the stock appliance. A config selects the scheme with
// route_resolver.type: opaquetoken; see README.md and ankusa.yaml.
//
// It imports what an outside program may: cli, config and edge.
package main

import (
	"os"

	"github.com/ankusa/ankusa/cli"
	"github.com/ankusa/ankusa/edge"
)

func main() {
	edge.RegisterResolver(resolverName, newResolver)
	os.Exit(cli.Main(os.Args[1:]))
}
