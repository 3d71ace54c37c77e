package meta

import (
	"crypto/sha256"
	"encoding/hex"
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

// RateLimitJSON is the stored form of an override (the value of
// m:ratelimit:<tenant>): what an audit row's spec_sha256 hashes.
func RateLimitJSON(rl config.RateLimit) []byte {
	j := rateLimitJSON{Rate: rl.Rate, Burst: rl.Burst, MaxQueue: rl.MaxQueue, MaxQueueBytes: int64(rl.MaxQueueBytes)}
	if math.IsInf(rl.Rate, 1) {
		j.Rate, j.Unlimited = 0, true
	}
	v, err := json.Marshal(j)
	if err != nil {
		panic("BUG: cannot encode a rate limit override: " + err.Error())
	}
	return v
}

// SetRateLimitOverride stores a tenant's override and the audit row that
// records it in one synced batch. An empty audit.SpecSHA256 is filled with
// the hash of the stored value.
func (s *Store) SetRateLimitOverride(tenant string, rl config.RateLimit, audit AuditRow) error {
	if math.IsNaN(rl.Rate) || math.IsInf(rl.Rate, -1) {
		return fmt.Errorf("cannot store the rate limit override of tenant %s: rate %v", tenant, rl.Rate)
	}
	v := RateLimitJSON(rl)
	if audit.SpecSHA256 == "" {
		sum := sha256.Sum256(v)
		audit.SpecSHA256 = hex.EncodeToString(sum[:])
	}
	old, err := s.rateLimitValue(tenant)
	if err != nil {
		return err
	}
	verb := "created"
	if old != nil {
		verb = "updated"
	}
	audit.Event = Event{Type: EventType("rate_limit", verb), Subject: tenant, Data: v}
	return s.auditedChange("store", tenant, audit, func(b *Batch) { b.set(rateLimitKey(tenant), v) })
}

// rateLimitValue is the stored override of tenant as JSON, nil when it
// has none.
func (s *Store) rateLimitValue(tenant string) (json.RawMessage, error) {
	var out json.RawMessage
	_, err := s.getKey("the rate limit override of tenant "+tenant, func(dst []byte) []byte { return appendNameKey(dst, prefixRateLimit, tenant) },
		func(v []byte) error { out = append(json.RawMessage(nil), v...); return nil })
	return out, err
}

// DeleteRateLimitOverride removes a tenant's override, with the audit row
// that records it, in one synced batch.
func (s *Store) DeleteRateLimitOverride(tenant string, audit AuditRow) error {
	old, err := s.rateLimitValue(tenant)
	if err != nil {
		return err
	}
	audit.Event = Event{Type: EventType("rate_limit", "deleted"), Subject: tenant, Data: old}
	return s.auditedChange("remove", tenant, audit, func(b *Batch) { b.del(rateLimitKey(tenant)) })
}

// auditedChange commits change and audit in one synced batch.
func (s *Store) auditedChange(verb, tenant string, audit AuditRow, change func(*Batch)) error {
	if audit.Action == "" || audit.At.IsZero() {
		return fmt.Errorf("BUG: meta: a rate limit change without its audit row (%+v)", audit)
	}
	b := s.NewBatch()
	defer b.Close()
	change(b)
	if err := b.AddAudit(audit); err != nil {
		return err
	}
	if err := b.Commit(Sync); err != nil {
		return fmt.Errorf("cannot %s the rate limit override of tenant %s: %w", verb, tenant, err)
	}
	return nil
}

// RateLimitOverrides lists every stored override.
func (s *Store) RateLimitOverrides() (map[string]config.RateLimit, error) {
	out := map[string]config.RateLimit{}
	lo, hi := prefixRange(prefixRateLimit)
	err := s.scan("rate limit overrides", lo, hi, func(k, v []byte) (bool, error) {
		tenant := parseNameKey(prefixRateLimit, k)
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
