package meta

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ankusa/ankusa/config"
)

// rateLimitJSON is the value of a tenant's runtime rate-limit override
// (key m:ratelimit:<tenant>).
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
	if err := s.set(rateLimitKey(tenant), v, Sync); err != nil {
		return fmt.Errorf("cannot store the rate limit override of tenant %s: %w", tenant, err)
	}
	return nil
}

// DeleteRateLimitOverride removes a tenant's override (a synced write).
func (s *Store) DeleteRateLimitOverride(tenant string) error {
	if err := s.db.Delete(rateLimitKey(tenant), Sync.opts()); err != nil {
		return fmt.Errorf("cannot remove the rate limit override of tenant %s: %w", tenant, err)
	}
	return nil
}

// RateLimitOverrides lists every stored override.
func (s *Store) RateLimitOverrides() (map[string]config.RateLimit, error) {
	out := map[string]config.RateLimit{}
	lo, hi := prefixRange(prefixRateLimit)
	err := s.scan("rate limit overrides", lo, hi, func(k, v []byte) (bool, error) {
		tenant := string(k[len(prefixRateLimit):])
		var j rateLimitJSON
		if err := json.Unmarshal(v, &j); err != nil {
			return true, fmt.Errorf("%w: rate limit override of tenant %s: %v", ErrBadRecord, tenant, err)
		}
		rl := config.RateLimit{Rate: j.Rate, Burst: j.Burst, MaxQueue: j.MaxQueue, MaxQueueBytes: config.Size(j.MaxQueueBytes)}
		if j.Unlimited {
			rl.Rate = math.Inf(1)
		}
		out[tenant] = rl
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
