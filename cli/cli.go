package cli

import (
	"fmt"
	"os"
)

// Version is set at build time
// (-ldflags "-X github.com/ankusa/ankusa/cli.Version=...").
var Version = "dev"

// exitConfig is EX_CONFIG from sysexits.h: the configuration is wrong.
const exitConfig = 78

const usage = `usage: ankusa <command> [flags]

commands:
  serve         -config FILE [-wal-recovery strict|truncate]   run the appliance (no -config: the embedded default)
  check-config  -config FILE                                   exit 0, or 78 naming every problem
  inspect wal   [-v] DIR                                       print the WAL's records, one per line
  inspect segment [-v] FILE                                    print a segment's footer and block index, verify it
  inspect segments DIR                                         verify every segment in a segment directory: one line each, the damaged seqs named
  replay        -config FILE [-since T] [-until T] [-tenant T] [-source S] [-node N] [-quarantined] [-to URL [-c N]]   print archived hooks as NDJSON, or post them to URL
  verify-archive -config FILE [-node N]                        check every archived segment against its catalogue object; exit 1 on any problem
  claim get     -config FILE [-o FILE] REF                      write the body a claim reference names (its JSON, or base64url), checked against its sha256
  claim delete  -config FILE -tenant T                          delete every claim pack of tenant T (claims/tenant=T/) in every claim store
  rewrap        -config FILE [-rate N]                         seal every stored secret under secrets.kek (after a rotation; the node stopped)
  presets       [-format table|json|markdown]                  list the verifier presets (verify.type), their family and headers
  version                                                      print the version
`

// Main runs the command line with args (without the program name) and
// returns the process exit code.
func Main(args []string) int {
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
	case "replay":
		return replay(args[1:])
	case "verify-archive":
		return verifyArchive(args[1:])
	case "rewrap":
		return rewrap(args[1:])
	case "claim":
		return claim(args[1:])
	case "presets":
		return presetsCmd(args[1:])
	case "version", "-version", "--version":
		fmt.Println("ankusa", Version)
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "ankusa: unknown command %q\n%s", args[0], usage)
		return 2
	}
}
