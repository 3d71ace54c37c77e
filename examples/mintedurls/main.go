// Command mintedurls is what a SaaS backend does with the appliance to
// give each customer integration its own opaque catch URL at runtime:
// mint a URL through the admin API, post a hook to it signed with the
// SaaS's Standard Webhooks secret, read the stored hook back, revoke the
// URL. It is a client only, plain net/http: the appliance it talks to is
// the stock ankusa binary with ankusa.yaml (see README.md). It imports no
// package of this module, and must not: it shows what a client outside
// the appliance does with the HTTP APIs alone (its test runs the binary).
//
//	mintedurls [flags] mint <tenant>               a new URL for tenant
//	mintedurls [flags] post <url|path> <body|->    sign with $MINTEDURLS_SECRET and post
//	mintedurls [flags] get <tenant> <event_id>     the stored hook, as JSON
//	mintedurls [flags] revoke <tenant> <route_id>  the URL's next post is 404
//	mintedurls [flags] demo <tenant>               all four in turn, each step printed
//
// The admin token is -token or $ANKUSA_ADMIN_TOKEN. Exit status: 0 done,
// 1 the node answered otherwise than the step needs, 2 bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// env is the program's view of its environment (os.Getenv; a map in tests).
type env func(string) string

// cmd is one run's settings and outputs.
type cmd struct {
	client    *Client
	hooks     string // the public listener's base URL
	source    string
	secret    string
	hc        *http.Client
	stdin     io.Reader
	out, errw io.Writer
}

// usageError is a command line the program cannot run (exit 2).
type usageError string

func (e usageError) Error() string { return string(e) }

func usagef(format string, args ...any) error { return usageError(fmt.Sprintf(format, args...)) }

const usage = `usage: mintedurls [-admin URL] [-hooks URL] [-token T] [-source S] <command>
  mint <tenant>                 mint an opaque URL for tenant
  post <url|path> <body|->      sign body (- reads stdin) with $MINTEDURLS_SECRET and post it
  get <tenant> <event_id>       print the stored hook
  revoke <tenant> <route_id>    revoke the URL
  demo <tenant>                 mint, post, get, revoke, post again (404)
`

// run is the program: it parses args, runs one command and returns the
// exit status.
func run(ctx context.Context, args []string, stdin io.Reader, out, errw io.Writer, getenv env) int {
	fs := flag.NewFlagSet("mintedurls", flag.ContinueOnError)
	fs.SetOutput(errw)
	fs.Usage = func() { fmt.Fprint(errw, usage); fs.PrintDefaults() }
	admin := fs.String("admin", "http://127.0.0.1:9090", "the admin listener's base URL")
	hooks := fs.String("hooks", "http://127.0.0.1:8080", "the public listener's base URL (a post to a path, mint's url)")
	// The token's default is read after Parse: a flag default would print
	// it in the usage text.
	token := fs.String("token", "", "the admin bearer token, scope tenant:* (default $ANKUSA_ADMIN_TOKEN)")
	src := fs.String("source", "saas-events", "the shared source a minted URL is bound to")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *token == "" {
		*token = getenv("ANKUSA_ADMIN_TOKEN")
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	c := &cmd{
		client: &Client{Admin: *admin, Token: *token, HTTP: hc},
		hooks:  strings.TrimRight(*hooks, "/"), source: *src, secret: getenv("MINTEDURLS_SECRET"),
		hc: hc, stdin: stdin, out: out, errw: errw,
	}
	err := c.dispatch(ctx, fs.Args())
	switch {
	case err == nil:
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(errw, "mintedurls: %v\n", err)
		fs.Usage()
		return 2
	default:
		fmt.Fprintf(errw, "mintedurls: %v\n", err)
		return 1
	}
}

// dispatch runs the command args names.
func (c *cmd) dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("no command")
	}
	commands := map[string]struct {
		n int
		f func(context.Context, []string) error
	}{
		"mint": {1, c.mint}, "post": {2, c.post}, "get": {2, c.get}, "revoke": {2, c.revoke}, "demo": {1, c.demo},
	}
	k, ok := commands[args[0]]
	switch {
	case !ok:
		return usagef("unknown command %q", args[0])
	case len(args)-1 != k.n:
		return usagef("%s takes %d argument(s), got %d", args[0], k.n, len(args)-1)
	case args[0] != "post" && c.client.Token == "":
		return usagef("%s needs the admin token: -token or $ANKUSA_ADMIN_TOKEN", args[0])
	case (args[0] == "post" || args[0] == "demo") && c.secret == "":
		return usagef("%s signs with $MINTEDURLS_SECRET, which is not set", args[0])
	}
	return k.f(ctx, args[1:])
}

func (c *cmd) mint(ctx context.Context, a []string) error {
	r, err := c.client.Mint(ctx, a[0], c.source)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "route  %s\ntenant %s\ntoken  %s   (shown once: the node keeps its hash)\nurl    %s%s\n", r.ID, r.TenantID, r.Token, c.hooks, r.URLPath)
	return nil
}

func (c *cmd) post(ctx context.Context, a []string) error {
	s, err := NewSigner(c.secret)
	if err != nil {
		return usagef("$MINTEDURLS_SECRET: %v", err)
	}
	body := []byte(a[1])
	if a[1] == "-" {
		if body, err = io.ReadAll(c.stdin); err != nil {
			return fmt.Errorf("cannot read the body from stdin: %w", err)
		}
	}
	target := a[0]
	if strings.HasPrefix(target, "/") {
		target = c.hooks + target
	}
	d, err := Post(ctx, c.hc, target, s, body)
	if err != nil {
		return err
	}
	if d.Status != http.StatusCreated {
		return fmt.Errorf("POST %s: %d %s", target, d.Status, strings.TrimSpace(string(d.Body)))
	}
	fmt.Fprintf(c.out, "%d %s\n", d.Status, d.EventID)
	return nil
}

func (c *cmd) get(ctx context.Context, a []string) error {
	b, err := c.client.HookJSON(ctx, a[0], a[1])
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "%s\n", b)
	return nil
}

func (c *cmd) revoke(ctx context.Context, a []string) error {
	if err := c.client.Revoke(ctx, a[0], a[1]); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "revoked %s of %s\n", a[1], a[0])
	return nil
}
