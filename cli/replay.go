package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ankusa/ankusa/internal/backoff"

	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/archive"
	"github.com/ankusa/ankusa/envelope"
)

// Bounds of `ankusa replay -to`.
const (
	// replayMaxWorkers bounds -c.
	replayMaxWorkers = 64
	// replayAttempts is how many times one hook is posted before the
	// replay gives up on the target.
	replayAttempts = 8
	// replayBackoff and replayMaxBackoff bound the wait between two
	// attempts (equal jitter over replayBackoff·2^n), and
	// replayMaxRetryAfter what a target's Retry-After may ask for.
	replayBackoff       = 500 * time.Millisecond
	replayMaxBackoff    = 30 * time.Second
	replayMaxRetryAfter = 5 * time.Minute
	// replayTimeout bounds one post.
	replayTimeout = 30 * time.Second
	// replayShownAnswer is how much of a refusing answer is printed.
	replayShownAnswer = 200
)

const replayUsage = "usage: ankusa replay -config FILE [-since T] [-until T] [-tenant T] [-source S] [-node N] [-quarantined] [-to URL [-c N]]\n"

// replay runs `ankusa replay`: it reads the archive the config names, with
// no node running, and writes the hooks the flags select as NDJSON on
// stdout or posts them to -to. Exit 2 for bad flags, 78 for a config that
// names no usable archive, 1 for a damaged archive or a target that
// refuses a hook.
func replay(args []string) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	path := fs.String("config", "", "config file naming the archive (default: the embedded default)")
	since := fs.String("since", "", "replay hooks received at or after `T` (RFC 3339, or a date: UTC midnight)")
	until := fs.String("until", "", "replay hooks received before `T` (RFC 3339, or a date: UTC midnight)")
	var f archive.Filter
	fs.StringVar(&f.Tenant, "tenant", "", "only this tenant's hooks")
	fs.StringVar(&f.Source, "source", "", "only this source's hooks")
	fs.StringVar(&f.Node, "node", "", "only the hooks this node (node.name) received")
	fs.BoolVar(&f.Quarantined, "quarantined", false, "include quarantined hooks (skipped by default)")
	to := fs.String("to", "", "post each hook to `URL` ({tenant_id}, {source_id} and {event_id} are replaced) instead of printing it")
	workers := fs.Int("c", 1, "post with `N` workers (1: in order)")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, replayUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "ankusa replay: "+format+"\n"+replayUsage, a...)
		return 2
	}
	var err error
	if fs.NArg() > 0 {
		return usage("unexpected argument %q", fs.Arg(0))
	}
	if f.Since, err = parseReplayTime("since", *since); err != nil {
		return usage("%v", err)
	}
	if f.Until, err = parseReplayTime("until", *until); err != nil {
		return usage("%v", err)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return usage("-since %s is not before -until %s", *since, *until)
	}
	if *workers < 1 || *workers > replayMaxWorkers {
		return usage("-c %d must be between 1 and %d", *workers, replayMaxWorkers)
	}
	if *workers > 1 && *to == "" {
		return usage("-c needs -to")
	}
	if *to != "" {
		if err := checkReplayTarget(*to); err != nil {
			return usage("%v", err)
		}
	}
	b, l, code := openArchive("replay", *path)
	if code != 0 {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runReplay(ctx, b, l, f, *to, *workers)
}

// openArchive loads the config (secrets resolved) and opens the archive
// it names for command cmd; a non-zero code is the exit code, the reason
// printed.
func openArchive(cmd, path string) (archive.Backend, archive.Layout, int) {
	cfg, err := loadConfig(path)
	if err != nil {
		printProblems(err)
		return nil, archive.Layout{}, exitConfig
	}
	if cfg.Archive.Type == "none" {
		fmt.Fprintf(os.Stderr, "config: archive.type is none: there is no archive to %s\n", strings.TrimSuffix(cmd, "-archive"))
		return nil, archive.Layout{}, exitConfig
	}
	if cfg.Archive.Type == "dir" {
		// archive.Open creates a missing directory, which would replay an
		// empty archive instead of saying the path is wrong.
		if _, err := os.Stat(cfg.Archive.Path); err != nil {
			fmt.Fprintf(os.Stderr, "ankusa %s: cannot open the archive: archive.path: %v\n", cmd, err)
			return nil, archive.Layout{}, 1
		}
	}
	b, l, err := archive.Open(cfg.Archive)
	if err != nil {
		printProblems(err)
		return nil, l, exitConfig
	}
	return b, l, 0
}

// parseReplayTime reads -since or -until: RFC 3339, with or without
// fractional seconds, or a date meaning its UTC midnight.
func parseReplayTime(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("-%s %q: want RFC 3339 (2026-11-29T19:40:00Z, 2026-11-29T19:40:00.123+01:00) or a date (2026-11-29, UTC midnight)", name, s)
}

// replayCounts are the hooks written or posted so far, read by the
// progress line while the replay runs.
type replayCounts struct{ hooks, bytes atomic.Int64 }

func (c *replayCounts) add(e *envelope.Envelope) {
	c.hooks.Add(1)
	c.bytes.Add(int64(len(e.Body)))
}

// runReplay replays and prints the summary line; it returns the exit code.
func runReplay(ctx context.Context, b archive.Backend, l archive.Layout, f archive.Filter, to string, workers int) int {
	start := time.Now()
	var counts replayCounts
	var deliver func(*envelope.Envelope) error
	var finish func() error
	if to == "" {
		w := &ndjsonWriter{w: bufio.NewWriterSize(os.Stdout, 64<<10), counts: &counts}
		deliver, finish = w.write, w.flush
	} else {
		p := startPoster(ctx, to, workers, &counts)
		deliver, finish = p.enqueue, p.finish
	}
	var prog archive.Progress
	var bar *progressBar
	if isTerminal(os.Stderr) {
		bar = &progressBar{out: os.Stderr, counts: &counts, start: start}
		prog = bar
	}
	st, err := archive.Replay(ctx, b, l, f, deliver, prog)
	if ferr := finish(); ferr != nil && (err == nil || errors.Is(err, context.Canceled)) {
		err = ferr
	}
	if bar != nil {
		bar.stop()
	}
	if n := len(st.Uncatalogued); n > 0 {
		keys := st.Uncatalogued[:min(n, 3)]
		fmt.Fprintf(os.Stderr, "replay: warning: %d segment objects have no catalogue object beside them and were not replayed (an upload in progress, or a node stopped between its two uploads): %s\n",
			n, strings.Join(keys, " "))
	}
	code := 0
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = errors.New("interrupted")
		}
		fmt.Fprintln(os.Stderr, "ankusa replay:", err)
		code = 1
	}
	summary := fmt.Sprintf("replay: %d hooks (%d bytes) from %d segments in %s",
		counts.hooks.Load(), counts.bytes.Load(), st.Segments, time.Since(start).Round(time.Millisecond))
	if st.Erased > 0 {
		summary += fmt.Sprintf(", %d skipped (tenant erased)", st.Erased)
	}
	fmt.Fprintln(os.Stderr, summary)
	return code
}

// ndjsonWriter writes one envelope JSON a line.
type ndjsonWriter struct {
	w      *bufio.Writer
	buf    []byte
	counts *replayCounts
}

func (n *ndjsonWriter) write(e *envelope.Envelope) error {
	n.buf = append(e.AppendJSON(n.buf[:0]), '\n')
	if _, err := n.w.Write(n.buf); err != nil {
		return fmt.Errorf("cannot write to stdout: %w", err)
	}
	n.counts.add(e)
	return nil
}

func (n *ndjsonWriter) flush() error {
	if err := n.w.Flush(); err != nil {
		return fmt.Errorf("cannot write to stdout: %w", err)
	}
	return nil
}

// checkReplayTarget checks -to with its placeholders filled in.
func checkReplayTarget(to string) error {
	u, err := url.Parse(expandReplayTarget(to, "t", "s", "e"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("-to %q: want an http:// or https:// URL", to)
	}
	return nil
}

func expandReplayTarget(to, tenant, source, event string) string {
	return strings.NewReplacer("{tenant_id}", tenant, "{source_id}", source, "{event_id}", event).Replace(to)
}

// poster posts hooks to -to with a fixed number of workers. The first hook
// the target refuses (or that fails every attempt) stops every worker.
type poster struct {
	to     string
	client *http.Client
	counts *replayCounts
	ctx    context.Context
	cancel context.CancelFunc
	jobs   chan *envelope.Envelope // unbuffered: the archive is not read ahead of the workers
	wg     sync.WaitGroup

	mu  sync.Mutex
	err error // why the workers stopped
}

func startPoster(ctx context.Context, to string, workers int, counts *replayCounts) *poster {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = workers
	p := &poster{
		to: to, counts: counts, jobs: make(chan *envelope.Envelope),
		client: &http.Client{
			Transport: tr,
			Timeout:   replayTimeout,
			// A redirect is an answer to report, not to follow: a 301 or
			// 302 would turn the POST into a GET that drops the body.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	p.ctx, p.cancel = context.WithCancel(ctx)
	for range workers {
		p.wg.Add(1)
		go p.work()
	}
	return p
}

// enqueue hands e to a worker; once the workers stopped it returns why.
func (p *poster) enqueue(e *envelope.Envelope) error {
	select {
	case p.jobs <- e:
		return nil
	case <-p.ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.err != nil {
			return p.err
		}
		return p.ctx.Err()
	}
}

// finish waits for the hooks handed over to be posted and returns why the
// workers stopped, if they did.
func (p *poster) finish() error {
	close(p.jobs)
	p.wg.Wait()
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *poster) work() {
	defer p.wg.Done()
	for e := range p.jobs {
		if p.ctx.Err() != nil {
			continue // stopped: drain
		}
		if err := p.post(e); err != nil {
			if p.ctx.Err() == nil {
				p.mu.Lock()
				if p.err == nil {
					p.err = err
				}
				p.mu.Unlock()
				p.cancel()
			}
			continue
		}
		p.counts.add(e)
	}
}

// post posts one hook until the target takes it (2xx), refuses it (any
// other status but 429 and 5xx) or replayAttempts fail.
func (p *poster) post(e *envelope.Envelope) error {
	target := expandReplayTarget(p.to, url.PathEscape(e.TenantID), url.PathEscape(e.SourceID), url.PathEscape(e.ID.String()))
	var last error
	for attempt := 1; ; attempt++ {
		retryAfter, err := p.postOnce(target, e)
		if err == nil {
			return nil
		}
		var refused *refusedError
		if errors.As(err, &refused) || p.ctx.Err() != nil {
			return err
		}
		last = err
		if attempt == replayAttempts {
			return fmt.Errorf("event %s: %d attempts failed; the last: %w", e.ID, attempt, last)
		}
		wait := replayWait(attempt)
		if retryAfter >= 0 {
			wait = min(retryAfter, replayMaxRetryAfter)
		}
		select {
		case <-p.ctx.Done():
			return p.ctx.Err()
		case <-time.After(wait):
		}
	}
}

// refusedError is an answer that retrying will not change.
type refusedError struct{ msg string }

func (r *refusedError) Error() string { return r.msg }

// postOnce makes one attempt. A retryable failure comes with the wait its
// Retry-After asks for (-1: none).
func (p *poster) postOnce(target string, e *envelope.Envelope) (time.Duration, error) {
	req, err := http.NewRequestWithContext(p.ctx, http.MethodPost, target, bytes.NewReader(e.Body))
	if err != nil {
		return -1, &refusedError{fmt.Sprintf("event %s: -to: %v", e.ID, err)}
	}
	copyReplayHeaders(req.Header, e.Headers)
	resp, err := p.client.Do(req)
	if err != nil {
		return -1, err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, replayShownAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is reused
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return -1, nil
	case code == http.StatusTooManyRequests || code >= 500:
		return parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()), fmt.Errorf("the target answered %s: %q", resp.Status, answer)
	default:
		return -1, &refusedError{fmt.Sprintf("event %s: the target answered %s: %q", e.ID, resp.Status, answer)}
	}
}

// replayWait is the wait after failed attempt n: full jitter over
// replayBackoff·2^(n-1), at most replayMaxBackoff.
func replayWait(n int) time.Duration { return backoff.Full(n-1, replayBackoff, replayMaxBackoff) }

// parseRetryAfter reads a Retry-After value (seconds or an HTTP date, at
// most a day); -1 when there is none or it does not parse.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if d, ok := backoff.RetryAfter([]byte(v), now, 24*time.Hour); ok {
		return d
	}
	return -1
}

// hopByHop are the headers of one connection, not of the hook: a replay
// sends the rest as received (RFC 9110 §7.6.1).
var hopByHop = map[string]bool{
	"Host": true, "Content-Length": true, "Connection": true, "Transfer-Encoding": true,
	"Keep-Alive": true, "Upgrade": true, "Te": true, "Trailer": true,
}

// copyReplayHeaders adds a hook's headers to h, less the hop-by-hop ones
// and those its Connection header names.
func copyReplayHeaders(h http.Header, hs []envelope.Header) {
	var named []string
	for _, f := range hs {
		if http.CanonicalHeaderKey(f.Name) == "Connection" {
			for _, n := range strings.Split(f.Value, ",") {
				named = append(named, http.CanonicalHeaderKey(strings.TrimSpace(n)))
			}
		}
	}
	for _, f := range hs {
		name := http.CanonicalHeaderKey(f.Name)
		if hopByHop[name] || strings.HasPrefix(name, "Proxy-") || slices.Contains(named, name) {
			continue
		}
		h[name] = append(h[name], f.Value)
	}
}

// isTerminal reports whether f is a terminal: the progress line is for
// people, not for logs.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// progressBar is the line on stderr, rewritten at most 5 times a second:
// hooks and bytes out, hooks/s and the ETA from the share of the selected
// segments read.
type progressBar struct {
	out    io.Writer
	counts *replayCounts
	start  time.Time
	total  int64
	read   atomic.Int64
	done   chan struct{}
	wg     sync.WaitGroup
	width  int // of the last line drawn
}

// Start implements archive.Progress.
func (p *progressBar) Start(_ int, bytes int64) {
	p.total = bytes
	p.done = make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
				p.draw()
			}
		}
	}()
}

// Advance implements archive.Progress.
func (p *progressBar) Advance(n int64) { p.read.Add(n) }

func (p *progressBar) draw() {
	elapsed := time.Since(p.start)
	hooks := p.counts.hooks.Load()
	eta := "?"
	if read := p.read.Load(); read > 0 && p.total > 0 {
		eta = (time.Duration(float64(elapsed) * float64(p.total-read) / float64(read))).Round(time.Second).String()
	}
	line := fmt.Sprintf("replay: %d hooks, %s, %.0f hooks/s, ETA %s", hooks, humanBytes(p.counts.bytes.Load()),
		float64(hooks)/max(elapsed.Seconds(), 1e-3), eta)
	pad := max(p.width-len(line), 0)
	p.width = len(line)
	fmt.Fprintf(p.out, "\r%s%s", line, strings.Repeat(" ", pad))
}

// stop draws the line a last time and ends it.
func (p *progressBar) stop() {
	if p.done == nil {
		return // the replay failed before it started
	}
	close(p.done)
	p.wg.Wait()
	p.draw()
	fmt.Fprintln(p.out)
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGT"[i])
}
