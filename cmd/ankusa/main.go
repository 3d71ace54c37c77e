// Command ankusa is the appliance's one binary: serve, check-config,
// inspect and version. It parses flags, loads config and wires the stages;
// the stages themselves live in their packages.
package main

import (
	"fmt"
	"os"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

// exitConfig is EX_CONFIG from sysexits.h: the configuration is wrong.
const exitConfig = 78

const usage = `usage: ankusa <command> [flags]

commands:
  serve         -config FILE [-wal-recovery strict|truncate]   run the appliance (no -config: the embedded default)
  check-config  -config FILE                                   exit 0, or 78 naming every problem
  inspect wal   [-v] DIR                                       print the WAL's records, one per line
  version                                                      print the version
`

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:])
	case "check-config":
		return checkConfig(args[1:])
	case "inspect":
		return inspect(args[1:])
	case "version", "-version", "--version":
		fmt.Println("ankusa", version)
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "ankusa: unknown command %q\n%s", args[0], usage)
		return 2
	}
}
