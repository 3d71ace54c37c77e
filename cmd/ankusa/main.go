// Command ankusa is the appliance's one binary; see package cli. It
// imports cli only.
package main

import (
	"os"

	"github.com/ankusa/ankusa/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
