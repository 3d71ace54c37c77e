package cli

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

func inspect(args []string) int {
	if len(args) == 0 || args[0] != "wal" {
		fmt.Fprint(os.Stderr, "usage: ankusa inspect wal [-v] DIR\n")
		return 2
	}
	fs := flag.NewFlagSet("inspect wal", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "print headers and body too")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 1 {
		fmt.Fprint(os.Stderr, "usage: ankusa inspect wal [-v] DIR\n")
		return 2
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var env envelope.Envelope
	err := wal.ReadDir(vfs.Default, fs.Arg(0), func(r *wal.Record) error {
		if r.Kind == envelope.KindTenant {
			fmt.Fprintf(out, "tenant\tordinal=%d\tname=%s\n", r.Ordinal, r.TenantName())
			return nil
		}
		if _, err := envelope.Decode(r.Payload, &env); err != nil {
			return fmt.Errorf("%s offset %d: %w", r.File, r.Offset, err)
		}
		fmt.Fprintf(out, "seq=%d\tid=%s\ttenant=%s\tsource=%s\tsize=%d\treceived_at=%s\n",
			env.Seq, env.ID, env.TenantID, env.SourceID, len(env.Body),
			time.Unix(0, env.ReceivedAt).UTC().Format(time.RFC3339Nano))
		if *verbose {
			for _, h := range env.Headers {
				fmt.Fprintf(out, "\theader\t%s: %s\n", h.Name, h.Value)
			}
			if utf8.Valid(env.Body) {
				fmt.Fprintf(out, "\tbody\t%s\n", strconv.Quote(string(env.Body)))
			} else {
				fmt.Fprintf(out, "\tbody(hex)\t%x\n", env.Body)
			}
		}
		return nil
	})
	if err != nil {
		out.Flush()
		fmt.Fprintln(os.Stderr, "ankusa inspect:", err)
		return 1
	}
	return 0
}
