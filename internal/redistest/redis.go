package redistest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// DefaultURL is the shared server when ANKUSA_REDIS_URL is not set.
const DefaultURL = "redis://127.0.0.1:6379/0"

// Need skips the test, or fails it when CI=true, saying what is missing:
// CI must not pass by skipping what it was meant to run.
func Need(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true: failing instead of skipping)", args...)
	}
	t.Skipf(format, args...)
}

// URL is the shared server the tests use, ANKUSA_REDIS_URL or DefaultURL,
// once it has answered a PING; when it does not, Need.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("ANKUSA_REDIS_URL")
	if u == "" {
		u = DefaultURL
	}
	c, err := newClient(u)
	if err != nil {
		t.Fatalf("ANKUSA_REDIS_URL %s: %v", redacted(u), err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		Need(t, "Redis at %s is not reachable: %v (run scripts/ensure-redis.sh)", redacted(u), err)
	}
	return u
}

// Client is a test's own client of the server at u, closed when the test
// ends, to look at and plant keys.
func Client(t testing.TB, u string) *redis.Client {
	t.Helper()
	c, err := newClient(u)
	if err != nil {
		t.Fatalf("redis client for %s: %v", redacted(u), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Namespace returns a key prefix of the test's own on the server at u,
// "ankusa-test:<test name>:<random>:". Every key under it is deleted when
// the test ends (SCAN of the prefix, then UNLINK: never a FLUSHDB on a
// shared server).
func Namespace(t testing.TB, u string) string {
	t.Helper()
	ns := fmt.Sprintf("ankusa-test:%s:%08x:", sanitize(t.Name()), rand.Uint32())
	t.Cleanup(func() {
		if n, err := DeletePrefix(u, ns); err != nil {
			t.Errorf("redistest: deleting the keys under %q (%d deleted): %v", ns, n, err)
		}
	})
	return ns
}

// DeletePrefix deletes every key of the server at u whose name starts with
// prefix (which must hold no glob character: *, ?, [ or \) and returns how
// many it deleted.
func DeletePrefix(u, prefix string) (int, error) {
	if prefix == "" || strings.ContainsAny(prefix, `*?[\`) {
		return 0, fmt.Errorf("prefix %q: empty or holds a glob character", prefix)
	}
	c, err := newClient(u)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := 0
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return n, err
		}
		if len(keys) > 0 {
			if err := c.Unlink(ctx, keys...).Err(); err != nil {
				return n, err
			}
			n += len(keys)
		}
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

func newClient(u string) (*redis.Client, error) {
	opt, err := redis.ParseURL(u)
	if err != nil {
		return nil, err
	}
	opt.DialTimeout = 2 * time.Second
	opt.ReadTimeout = 5 * time.Second
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return redis.NewClient(opt), nil
}

// sanitize keeps a test name to [a-z0-9_-], so a namespace holds no glob
// character and no separator of its own.
func sanitize(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

// redacted is u without its password, for messages.
func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}
