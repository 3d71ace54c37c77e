package source

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ankusa/ankusa/config"
)

// The records a writable store keeps, one per source and one per route
// (meta keys src/ and rte/, or a Redis entry): JSON, versioned. A source's
// spec is its source document (config.EncodeSource, secrets included); a
// route keeps its tokens' digests only.

const recordVersion = 1

type sourceRecord struct {
	V       int             `json:"v"`
	Name    string          `json:"name"`
	Tenant  string          `json:"tenant_id"`
	Spec    json.RawMessage `json:"spec"`
	Created time.Time       `json:"created_at"`
	Updated time.Time       `json:"updated_at"`
}

type routeRecord struct {
	V        int           `json:"v"`
	ID       string        `json:"id"`
	Tenant   string        `json:"tenant_id"`
	SourceID string        `json:"source_id,omitempty"`
	Host     string        `json:"host,omitempty"`
	Path     string        `json:"path,omitempty"`
	Tokens   []tokenRecord `json:"tokens,omitempty"`
	Created  time.Time     `json:"created_at"`
	Updated  time.Time     `json:"updated_at"`
}

type tokenRecord struct {
	ID      string    `json:"id"`
	SHA256  string    `json:"sha256"`
	Created time.Time `json:"created_at"`
}

func encodeSourceRecord(src *Source) []byte {
	b, err := json.Marshal(sourceRecord{
		V: recordVersion, Name: src.Name, Tenant: src.TenantID,
		Spec:    config.EncodeSource(&src.Spec, true),
		Created: src.Created, Updated: src.Updated,
	})
	if err != nil {
		panic("BUG: source: cannot encode a source record: " + err.Error())
	}
	return b
}

// decodeSourceRecord reads a stored source record into its spec (secrets
// resolved, defaults applied), without validating it: a source stored
// before a rule existed keeps serving.
func decodeSourceRecord(tenant, name string, v []byte, dedupeTTL config.Duration) (rec sourceRecord, spec config.Source, err error) {
	if err := json.Unmarshal(v, &rec); err != nil {
		return rec, spec, fmt.Errorf("stored source %q of tenant %q does not decode: %v", name, tenant, err)
	}
	if rec.V != recordVersion || rec.Name != name || rec.Tenant != tenant {
		return rec, spec, fmt.Errorf("stored source %q of tenant %q: record version %d names %q of tenant %q", name, tenant, rec.V, rec.Name, rec.Tenant)
	}
	spec, err = config.DecodeSource(rec.Spec)
	if err != nil {
		return rec, spec, fmt.Errorf("stored source %q of tenant %q: %v", name, tenant, err)
	}
	if probs := config.ResolveLiteralSecrets(&spec); len(probs) > 0 {
		return rec, spec, fmt.Errorf("stored source %q of tenant %q: %v", name, tenant, probs)
	}
	config.DefaultSource(&spec, dedupeTTL)
	spec.TenantID = tenant
	return rec, spec, nil
}

func encodeRouteRecord(r *Route) []byte {
	rec := routeRecord{
		V: recordVersion, ID: r.ID, Tenant: r.TenantID, SourceID: r.SourceID,
		Host: string(r.Host), Path: r.Path, Created: r.Created, Updated: r.Updated,
	}
	for _, t := range r.Tokens {
		rec.Tokens = append(rec.Tokens, tokenRecord{ID: t.ID, SHA256: hex.EncodeToString(t.Digest[:]), Created: t.Created})
	}
	b, err := json.Marshal(rec)
	if err != nil {
		panic("BUG: source: cannot encode a route record: " + err.Error())
	}
	return b
}

func decodeRouteRecord(tenant, id string, v []byte) (*Route, error) {
	var rec routeRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("stored route %q of tenant %q does not decode: %v", id, tenant, err)
	}
	if rec.V != recordVersion || rec.ID != id || rec.Tenant != tenant {
		return nil, fmt.Errorf("stored route %q of tenant %q: record version %d names %q of tenant %q", id, tenant, rec.V, rec.ID, rec.Tenant)
	}
	r := compileRoute(config.Route{ID: id, TenantID: tenant, SourceID: rec.SourceID, Host: rec.Host, Path: rec.Path})
	if r == nil {
		return nil, fmt.Errorf("stored route %q of tenant %q: path %q does not parse", id, tenant, rec.Path)
	}
	r.Created, r.Updated = rec.Created, rec.Updated
	for _, t := range rec.Tokens {
		tok := Token{ID: t.ID, Created: t.Created}
		if n, err := hex.Decode(tok.Digest[:], []byte(t.SHA256)); err != nil || n != sha256.Size {
			return nil, fmt.Errorf("stored route %q of tenant %q: token %s has no valid digest", id, tenant, t.ID)
		}
		r.Tokens = append(r.Tokens, tok)
	}
	return r, nil
}

// mintText is 128 random bits as 26 lower-case base32 characters: an
// unguessable name, route id or token within the name grammar.
func mintText(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("BUG: source: crypto/rand failed: " + err.Error())
	}
	return prefix + lowerBase32.EncodeToString(b[:])
}

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newToken makes a route token: the text (shown once) and what the route
// keeps.
func newToken(text string, now time.Time) Token {
	t := Token{Digest: sha256.Sum256([]byte(text)), Created: now}
	t.ID = "tok-" + hex.EncodeToString(t.Digest[:6])
	return t
}

// specDigest is the hex SHA-256 of a spec's JSON form without its secrets:
// what an audit row records of a change.
func specDigest(doc []byte) string {
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}
