// Package redisx builds the node's Redis clients (fleet dedupe, fleet rate
// limits) the one way they should be built: short timeouts, one dial
// attempt, no command retries, so a dead or hung Redis costs a request
// one timeout and the caller falls back at once. It imports nothing of
// this module.
package redisx

import (
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// DefaultTimeout bounds a dial, a read and a write, unless redis.url's
// query sets them.
const DefaultTimeout = 200 * time.Millisecond

// NewClient parses rawURL (redis.url; errors name it without its password)
// and builds a client; it does not need Redis to be up. addr is the URL
// with its password redacted, for logs.
func NewClient(rawURL string) (c *redis.Client, addr string, err error) {
	return NewClientOf("redis.url", rawURL)
}

// NewClientOf is NewClient for the URL of the config key key (errors
// name it).
func NewClientOf(key, rawURL string) (c *redis.Client, addr string, err error) {
	return NewClientWith(key, rawURL, DefaultTimeout)
}

// NewClientWith is NewClientOf with timeout in place of DefaultTimeout for
// reads, writes and the pool (the dial keeps DefaultTimeout, so a Redis
// that is down is found at once): for a client whose exchanges carry more
// than a key (the redis source store's catch-up batches and scripts).
func NewClientWith(key, rawURL string, timeout time.Duration) (c *redis.Client, addr string, err error) {
	if rawURL == "" {
		return nil, "", fmt.Errorf("%s: empty; want redis://host:port/db", key)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, password and all
		}
		return nil, "", fmt.Errorf("%s: not a URL (%v); want redis://host:port/db", key, err)
	}
	addr = u.Redacted()
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, addr, fmt.Errorf("%s %q: %v", key, addr, err)
	}
	// A connection broken while idle is found by the pool's health check
	// before use, not by a failed command.
	if opt.DialTimeout == 0 {
		opt.DialTimeout = DefaultTimeout
	}
	if opt.ReadTimeout == 0 {
		opt.ReadTimeout = timeout
	}
	if opt.WriteTimeout == 0 {
		opt.WriteTimeout = timeout
	}
	if opt.PoolTimeout == 0 {
		opt.PoolTimeout = timeout
	}
	if opt.PoolSize == 0 {
		opt.PoolSize = min(10*runtime.GOMAXPROCS(0), 64)
	}
	if opt.MaxRetries == 0 {
		opt.MaxRetries = -1
	}
	opt.DialerRetries = 1
	opt.ContextTimeoutEnabled = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return redis.NewClient(opt), addr, nil
}
