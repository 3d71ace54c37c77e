package main

// The browser the console tests drive: Debian's chromium, headless, over
// the DevTools protocol (chromedp), on a fresh profile, with every feature
// that would reach the network on its own turned off (on a closed network
// those make it hang). Each step has a deadline; a failed step saves a
// screenshot and the page's text.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium (scripts/ensure-chromium.sh installs
// it; make test runs that first).
const chromiumPath = "/usr/bin/chromium"

// browser is one headless chromium tab on a console.
type browser struct {
	t     *testing.T
	ctx   context.Context
	base  string // http://<admin>/console/
	shots string // where screenshots go

	mu       sync.Mutex
	problems []string // exceptions and CSP refusals the page met
	logs     []string // the other console errors (a refused API call's 403, ...)
	requests []string // the URL of every request the page made, in order
}

// newBrowser starts chromium for t on the console at base; the test's
// cleanup stops it.
func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("no chromium at %s (scripts/ensure-chromium.sh installs it): %v", chromiumPath, err)
	}
	b := &browser{t: t, base: base, shots: screenshotDir(t)}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first Run starts the browser; it must not carry a deadline.
	start := make(chan error, 1)
	go func() { start <- chromedp.Do(ctx, chromedp.Navigate("about:blank")) }()
	select {
	case err := <-start:
		if err != nil {
			t.Fatalf("cannot start chromium: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("chromium did not start within 30s")
	}
	b.ctx = ctx
	t.Logf("screenshots of %s in %s", t.Name(), b.shots)
	return b
}

// screenshotDir is t.ArtifactDir() when go test runs with -artifacts
// (make test does), else bin/console-screenshots/<test>/ of the module
// (gitignored), so a run by hand keeps them too.
func screenshotDir(t *testing.T) string {
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		return t.ArtifactDir()
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "bin", "console-screenshots", strings.ReplaceAll(t.Name(), "/", "_")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (b *browser) listen(ev any) {
	var line string
	problem := false
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.mu.Lock()
		b.requests = append(b.requests, ev.Request.URL)
		b.mu.Unlock()
		return
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		line = "exception: " + d.Text
		if d.Exception != nil {
			line += " " + d.Exception.Description
		}
		problem = true
	case *log.EventEntryAdded:
		if ev.Entry.Level != log.EntryLevelError && ev.Entry.Level != log.EntryLevelWarning {
			return
		}
		line = fmt.Sprintf("%s %s: %s %s", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
		problem = strings.Contains(ev.Entry.Text, "Content Security Policy")
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		line = "console.error"
		for _, a := range ev.Args {
			line += " " + string(a.Value) + a.Description
		}
		problem = true
	default:
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if problem {
		b.problems = append(b.problems, line)
	} else {
		b.logs = append(b.logs, line)
	}
}

// checkProblems fails the test on any exception the page threw or any
// resource the CSP refused (an inline script or style would be one).
func (b *browser) checkProblems() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		b.t.Errorf("the console met %d problems:\n%s\nother console errors:\n%s", len(b.problems), strings.Join(b.problems, "\n"), strings.Join(b.logs, "\n"))
	}
}

// do runs the actions of one step within 20s, failing the test (with a
// screenshot and the page's text) when they fail.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(what, err)
	}
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	name := "failed-" + regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(what), "-")
	b.shot(name)
	text, terr := b.readText()
	if terr != nil {
		text = "(cannot read it: " + terr.Error() + ")"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.t.Fatalf("%s: %v\npage text:\n%s\nconsole:\n%s\n%s", what, err, text, strings.Join(b.problems, "\n"), strings.Join(b.logs, "\n"))
}

// requestMark is where the next request the page makes will be in
// requestsSince's list.
func (b *browser) requestMark() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.requests)
}

// requestsSince is the URLs of the requests the page made since mark.
func (b *browser) requestsSince(mark int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests[mark:]...)
}

// eval evaluates js (an expression) and decodes its value into v.
func (b *browser) eval(what, js string, v any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](js))
	if err == nil && v != nil {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		b.fail(what, err)
	}
}

// text is what the page shows (document.body.innerText); a page that
// cannot be read fails the test.
func (b *browser) text() string {
	b.t.Helper()
	s, err := b.readText()
	if err != nil {
		b.fail("read the page's text", err)
	}
	return s
}

func (b *browser) readText() (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
}

// everything is all the page holds: its markup (outerHTML: attributes,
// hidden nodes, datalists) and the value of every input, then its text.
func (b *browser) everything() string {
	b.t.Helper()
	var s string
	b.eval("read the page's markup and values", `document.documentElement.outerHTML + "\n" +
		[...document.querySelectorAll("input, textarea, select")].map((e) => e.value).join("\n")`, &s)
	return s + "\n" + b.text()
}

// open goes to the console's view #/<hash> and waits until the console has
// drawn it: a render whose seq is newer than the one on screen before, of
// that view (app.js sets body's data-seq and data-view once a view is
// drawn).
func (b *browser) open(hash string) {
	b.t.Helper()
	var before string
	b.eval("the seq before #/"+hash, `document.body.dataset.seq || ""`, &before)
	view, _, _ := strings.Cut(hash, "?")
	// The same hash again is no hashchange: send one, as a click on the
	// link of the view on screen would be.
	b.eval("open #/"+hash, fmt.Sprintf(`(location.hash === %[1]q ? window.dispatchEvent(new HashChangeEvent("hashchange")) : (location.hash = %[1]q), true)`, "#/"+hash), nil)
	b.waitJS("the view #/"+hash+" is drawn", fmt.Sprintf(`document.body.dataset.seq !== %q && document.body.dataset.view === %q`, before, view), 15*time.Second, "")
}

// waitJS polls cond (a JS expression) until it is true, running again (a
// JS statement, "" for none) every second in between.
func (b *browser) waitJS(what, cond string, within time.Duration, again string) {
	b.t.Helper()
	deadline := time.Now().Add(within)
	last := time.Now()
	for {
		var ok bool
		b.eval(what, "!!("+cond+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.fail(what, fmt.Errorf("not within %s", within))
		}
		if again != "" && time.Since(last) > time.Second {
			b.eval(what+" (again)", "("+again+", true)", nil)
			last = time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitText waits until the page's text holds s.
func (b *browser) waitText(what, s string, within time.Duration, again string) {
	b.t.Helper()
	b.waitJS(what, fmt.Sprintf(`document.body.innerText.includes(%q)`, s), within, again)
}

// shot saves a full-page screenshot as <name>.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Error(err)
	}
}

// login loads the console and logs in with token (and tenant, for a token
// without tenants:read).
func (b *browser) login(token, tenant string) {
	b.t.Helper()
	b.do("load the console", chromedp.Navigate(b.base), chromedp.WaitVisible(chromedp.ID("login-token")))
	actions := []chromedp.Action[chromedp.Void]{chromedp.SendKeys(chromedp.ID("login-token"), token)}
	if tenant != "" {
		actions = append(actions, chromedp.SendKeys(chromedp.ID("login-tenant"), tenant))
	}
	actions = append(actions, chromedp.Click(chromedp.ID("login-submit")), chromedp.WaitVisible(chromedp.ID("logout")))
	b.do("log in", actions...)
	b.waitJS("the tenants view after logging in", `location.hash === "#/tenants" && document.querySelector("#main h1").innerText === "Tenants" && document.querySelector("#main table, #main .notice")`, 10*time.Second, "")
}

// click clicks, in the page, the button labelled label inside the first
// element that matches scope (a CSS selector).
func (b *browser) click(scope, label string) {
	b.t.Helper()
	var ok bool
	b.eval("click "+label+" in "+scope, fmt.Sprintf(`(() => {
		const s = document.querySelector(%q);
		const btn = s && [...s.querySelectorAll("button")].find((x) => x.textContent === %q);
		if (!btn) return false;
		btn.click();
		return true;
	})()`, scope, label), &ok)
	if !ok {
		b.fail("click "+label, fmt.Errorf("no button %q in %s", label, scope))
	}
}

// Short forms of the chromedp actions the tests use, by element id.
func navTo(url string) chromedp.Action[chromedp.Void] { return chromedp.Navigate(url) }
func typeInto(id, text string) chromedp.Action[chromedp.Void] {
	return chromedp.SendKeys(chromedp.ID(id), text)
}
func clickID(id string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.ID(id)) }
func clearID(id string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById(%q).value = ""`, id))
}
func waitVisibleID(id string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.ID(id))
}

// evalAwait evaluates js (an expression whose value may be a promise) and
// decodes what it resolves to into v.
func (b *browser) evalAwait(what, js string, v any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if err == nil && v != nil {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		b.fail(what, err)
	}
}

// storedToken is the token the tab keeps.
func (b *browser) storedToken() string {
	b.t.Helper()
	var s string
	b.eval("the kept token", `sessionStorage.getItem("ankusa.token") || ""`, &s)
	return s
}
