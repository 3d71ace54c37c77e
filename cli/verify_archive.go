package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ankusa/ankusa/archive"
)

const verifyArchiveUsage = "usage: ankusa verify-archive -config FILE [-node N]\n"

// verifyArchive runs `ankusa verify-archive`: it checks every archived
// segment of the archive the config names against its catalogue object
// (archive.Verify), with no node running, prints one line per problem
// and a summary, and exits 1 on any problem (2 for bad flags, 78 for a
// config that names no usable archive).
func verifyArchive(args []string) int {
	fs := flag.NewFlagSet("verify-archive", flag.ContinueOnError)
	path := fs.String("config", "", "config file naming the archive (default: the embedded default)")
	node := fs.String("node", "", "only this node's segments (node.name)")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, verifyArchiveUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "ankusa verify-archive: unexpected argument %q\n%s", fs.Arg(0), verifyArchiveUsage)
		return 2
	}
	b, l, code := openArchive("verify-archive", *path)
	if code != 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	st, err := archive.Verify(ctx, b, l, *node, func(p archive.Problem) {
		fmt.Fprintf(out, "problem\t%s\t%s\n", p.Key, p.What)
	})
	if err != nil {
		out.Flush()
		fmt.Fprintln(os.Stderr, "ankusa verify-archive: cannot read the archive:", err)
		return 1
	}
	fmt.Fprintf(out, "verify-archive: %s: %d segment objects (%s) checked, %d problems\n", b.String(), st.Segments, humanBytes(st.Bytes), st.Problems)
	if st.Problems > 0 {
		return 1
	}
	return 0
}
