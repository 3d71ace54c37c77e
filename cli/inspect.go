package cli

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/wal"
)

const inspectUsage = "usage: ankusa inspect wal [-v] DIR | ankusa inspect segment [-v] FILE | ankusa inspect segments DIR\n"

func inspect(args []string) int {
	if len(args) > 0 && args[0] == "segment" {
		return inspectSegment(args[1:])
	}
	if len(args) > 0 && args[0] == "segments" {
		return inspectSegments(args[1:])
	}
	if len(args) == 0 || args[0] != "wal" {
		fmt.Fprint(os.Stderr, inspectUsage)
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
		printEnvelope(out, &env, *verbose)
		return nil
	})
	if err != nil {
		out.Flush()
		fmt.Fprintln(os.Stderr, "ankusa inspect:", err)
		return 1
	}
	return 0
}

// printEnvelope prints one hook on a line, and with verbose the sender's
// address, its headers and its body below it.
func printEnvelope(out *bufio.Writer, env *envelope.Envelope, verbose bool) {
	fmt.Fprintf(out, "seq=%d\tid=%s\ttenant=%s\tsource=%s\tsize=%d\treceived_at=%s\n",
		env.Seq, env.ID, env.TenantID, env.SourceID, len(env.Body),
		time.Unix(0, env.ReceivedAt).UTC().Format(time.RFC3339Nano))
	if !verbose {
		return
	}
	if env.RemoteAddr != "" {
		fmt.Fprintf(out, "\tremote_addr\t%s\n", env.RemoteAddr)
	}
	for _, h := range env.Headers {
		fmt.Fprintf(out, "\theader\t%s: %s\n", h.Name, h.Value)
	}
	if utf8.Valid(env.Body) {
		fmt.Fprintf(out, "\tbody\t%s\n", strconv.Quote(string(env.Body)))
	} else {
		fmt.Fprintf(out, "\tbody(hex)\t%x\n", env.Body)
	}
}

// inspectSegment prints a segment's footer and block index, then checks
// every block (checksums, counts, seqs); with -v it prints every hook.
// Damage is reported with its offset and the exit code is 1.
func inspectSegment(args []string) int {
	fs := flag.NewFlagSet("inspect segment", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "print every hook (with headers and body)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprint(os.Stderr, inspectUsage)
		return 2
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	fail := func(err error) int {
		out.Flush()
		fmt.Fprintln(os.Stderr, "ankusa inspect:", err)
		return 1
	}
	f, err := segment.OpenFile(vfs.Default, fs.Arg(0))
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	ft := &f.Footer
	ts := func(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
	fmt.Fprintf(out, "segment\t%s\nsize\t%d bytes\nhooks\t%d\nseqs\t%d..%d\nids\t%s..%s\nreceived_at\t%s..%s\nraw\t%d bytes (raw/file %.2f)\nblocks\t%d (index at offset %d)\n",
		f.Path, f.Size, ft.Count, ft.FirstSeq, ft.LastSeq, ft.FirstID, ft.LastID,
		ts(ft.MinReceivedAt), ts(ft.MaxReceivedAt), ft.RawBytes, float64(ft.RawBytes)/float64(f.Size), ft.Blocks, ft.IndexOffset)
	for i, b := range f.Index {
		fmt.Fprintf(out, "block %d\toffset=%d\tcompressed=%d\traw=%d\tcrc32c=%08x\thooks=%d\tfirst_seq=%d\tfirst_id=%s\n",
			i, b.Offset, b.CompLen, b.RawLen, b.CRC, b.Count, b.FirstSeq, b.FirstID)
	}
	if f.DictID != 0 {
		fmt.Fprintf(out, "format\tversion 2\ndictionary\tid %d, %d bytes (blocks start at offset %d)\n", f.DictID, len(f.Dict()), f.BlocksStart())
	} else {
		fmt.Fprintf(out, "format\tversion 1\ndictionary\tnone\n")
	}
	dec := segment.NewDecoder()
	defer dec.Close()
	if *verbose {
		var raw []byte
		for i := range f.Index {
			if raw, err = f.ReadBlock(i, dec, raw[:0]); err != nil {
				return fail(err)
			}
			err = segment.Records(raw, func(p []byte) error {
				var env envelope.Envelope
				if _, err := envelope.Decode(p, &env); err != nil {
					return err
				}
				printEnvelope(out, &env, true)
				return nil
			})
			if err != nil {
				return fail(fmt.Errorf("%s block %d: %w", f.Path, i, err))
			}
		}
	}
	if err := f.Verify(dec); err != nil {
		return fail(err)
	}
	fmt.Fprintln(out, "verify\tok (every block's checksum, count, seqs and ids)")
	return 0
}

// inspectSegments checks every sealed segment in a segment directory
// (footer, index, every block and record), one line each: ok, or damaged
// with the seqs whose hooks cannot be read from it and why. It reads the
// files only, so it runs beside a serving node too. Exit 1 when any is
// damaged.
func inspectSegments(args []string) int {
	fs := flag.NewFlagSet("inspect segments", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprint(os.Stderr, inspectUsage)
		return 2
	}
	dir := fs.Arg(0)
	names, err := vfs.Default.List(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ankusa inspect:", err)
		return 1
	}
	slices.Sort(names)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	dec := segment.NewDecoder()
	defer dec.Close()
	var checked, damaged int
	for _, name := range names {
		if !strings.HasSuffix(name, segment.Suffix) {
			continue
		}
		checked++
		d, bad, err := segment.CheckFile(vfs.Default, filepath.Join(dir, name), dec)
		switch {
		case err != nil:
			damaged++
			fmt.Fprintf(out, "unreadable\t%s\t%v\n", name, err)
		case bad:
			damaged++
			fmt.Fprintf(out, "damaged\t%s\tseqs %d..%d\t%s\n", name, d.FirstSeq, d.LastSeq, d.Reason)
		default:
			fmt.Fprintf(out, "ok\t%s\tseqs %d..%d\n", name, d.FirstSeq, d.LastSeq)
		}
	}
	fmt.Fprintf(out, "segments\t%d checked, %d damaged\n", checked, damaged)
	if damaged > 0 {
		return 1
	}
	return 0
}
