package meta

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ankusa/ankusa/config"
)

// prefixRateLimit keys a tenant's runtime rate-limit override:
// m:ratelimit:<tenant> → JSON {rate, burst, max_queue, max_queue_bytes}.
const prefixRateLimit = "m:ratelimit:"

type rateLimitJSON struct {
	Rate          float64 `json:"rate"`
	Burst         int     `json:"burst"`
	MaxQueue      int     `json:"max_queue"`
	MaxQueueBytes int64   `json:"max_queue_bytes"`
	// Unlimited stands for an infinite rate, which JSON cannot hold.
	Unlimited bool `json:"unlimited,omitempty"`
}

// SetRateLimitOverride stores a tenant's override (a synced write).
func (s *Store) SetRateLimitOverride(tenant string, rl config.RateLimit) error {
	j := rateLimitJSON{Rate: rl.Rate, Burst: rl.Burst, MaxQueue: rl.MaxQueue, MaxQueueBytes: int64(rl.MaxQueueBytes)}
	if math.IsInf(rl.Rate, 1) {
		j.Rate, j.Unlimited = 0, true
	}
	v, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if err := s.db.Set([]byte(prefixRateLimit+tenant), v, pebble.Sync); err != nil {
		return fmt.Errorf("cannot store the rate limit override of tenant %s: %w", tenant, err)
	}
	return nil
}

// DeleteRateLimitOverride removes a tenant's override (a synced write).
func (s *Store) DeleteRateLimitOverride(tenant string) error {
	if err := s.db.Delete([]byte(prefixRateLimit+tenant), pebble.Sync); err != nil {
		return fmt.Errorf("cannot remove the rate limit override of tenant %s: %w", tenant, err)
	}
	return nil
}

// RateLimitOverrides lists every stored override.
func (s *Store) RateLimitOverrides() (map[string]config.RateLimit, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixRateLimit), UpperBound: upperBound(prefixRateLimit)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := map[string]config.RateLimit{}
	for ok := it.First(); ok; ok = it.Next() {
		tenant := strings.TrimPrefix(string(it.Key()), prefixRateLimit)
		var j rateLimitJSON
		if err := json.Unmarshal(it.Value(), &j); err != nil {
			return nil, fmt.Errorf("%w: rate limit override of tenant %s: %v", ErrBadRecord, tenant, err)
		}
		rl := config.RateLimit{Rate: j.Rate, Burst: j.Burst, MaxQueue: j.MaxQueue, MaxQueueBytes: config.Size(j.MaxQueueBytes)}
		if j.Unlimited {
			rl.Rate = math.Inf(1)
		}
		out[tenant] = rl
	}
	return out, it.Error()
}
