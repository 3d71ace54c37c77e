package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/ankusa/ankusa/verify"
)

// presetsCmd lists the verifier catalogue: a table (name, family, the
// headers a preset reads), its full data (-format json), or the README's
// table (-format markdown).
func presetsCmd(args []string) int {
	fs := flag.NewFlagSet("presets", flag.ContinueOnError)
	format := fs.String("format", "table", "table, json or markdown (the README's table)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "ankusa presets: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if err := writePresets(os.Stdout, *format); err != nil {
		fmt.Fprintln(os.Stderr, "ankusa presets:", err)
		return 2
	}
	return 0
}

func writePresets(w io.Writer, format string) error {
	ps, err := verify.Presets()
	if err != nil {
		return err
	}
	switch format {
	case "table":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tFAMILY\tHEADERS")
		for _, p := range ps {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, p.Family, strings.Join(presetHeaders(&p), ", "))
		}
		return tw.Flush()
	case "json":
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(ps)
	case "markdown":
		_, err := io.WriteString(w, presetsMarkdown(ps))
		return err
	}
	return fmt.Errorf("-format: %q must be table, json or markdown", format)
}

// presetHeaders are the request headers a preset reads: the signature's,
// the timestamp's and the delivery id's.
func presetHeaders(p *verify.Preset) []string {
	var out []string
	add := func(h string) {
		if h != "" && !containsFold(out, h) {
			out = append(out, h)
		}
	}
	switch {
	case p.Family == "basic":
		add(or(p.Header, "Authorization"))
	case p.Family == "standardwebhooks":
		add(or(p.Header, "webhook-signature"))
	case p.Signature != "":
		add("(body) " + p.Signature)
	default:
		add(p.Header)
	}
	if p.Timestamp != nil && p.Timestamp.From != "list" {
		add(strings.TrimPrefix(p.Timestamp.From, "header:"))
	}
	if strings.HasPrefix(p.ID, "header:") {
		add(strings.TrimPrefix(p.ID, "header:"))
	}
	for i, h := range out {
		if strings.HasPrefix(h, "json:") {
			out[i] = "(body) " + h
		}
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// presetsMarkdown is README.md's table of presets, between its
// <!-- presets --> and <!-- /presets --> markers.
func presetsMarkdown(ps []verify.Preset) string {
	var b strings.Builder
	b.WriteString("| type | provider | family | signature | handshake | docs |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, p := range ps {
		sig := presetHeaders(&p)[0]
		hs := p.Handshake
		if hs == "" {
			hs = "-"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | %s | [docs](%s) |\n", p.Name, mdEscape(p.Title), p.Family, sig, hs, p.Docs)
	}
	return b.String()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
