package source

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/secrets"
)

// The records a writable store keeps, one per source and one per route
// (meta keys src/ and rte/, or a Redis entry): JSON, versioned. A source's
// spec is its source document (config.EncodeSource, secrets included); a
// route keeps its tokens' digests only.
//
// With secrets.kek set, a source record keeps none of its secrets in its
// spec: each verify secret, sink secret, sink header value and sink URL
// password is sealed (package secrets, bound to the tenant, the source and
// the field's path) into "sealed", by path ("verify.secret",
// "verify.secrets[1]", "sinks[0].secret", "sinks[0].headers.<name>" (the
// spec keeps the header's name with an empty value), "sinks[0].url" for
// the URL's password, which the spec's URL then goes without). The rest
// of the spec stays readable.

const recordVersion = 1

type sourceRecord struct {
	V      int             `json:"v"`
	Name   string          `json:"name"`
	Tenant string          `json:"tenant_id"`
	Spec   json.RawMessage `json:"spec"`
	// Sealed holds the secrets of Spec sealed under a KEK, by path, each
	// the standard base64 of a sealed blob.
	Sealed  map[string]string `json:"sealed,omitempty"`
	Created time.Time         `json:"created_at"`
	Updated time.Time         `json:"updated_at"`
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

// encodeSourceRecord is src's record, its secrets sealed under kr's
// current key when kr is enabled (in clear otherwise).
func encodeSourceRecord(src *Source, kr *secrets.Keyring) []byte {
	spec := copySpec(&src.Spec)
	var sealed map[string]string
	if kr.Enabled() {
		sealed = map[string]string{}
		seal := func(path, plain string) {
			ad := secrets.AD{Tenant: src.TenantID, Source: src.Name, Field: path}
			sealed[path] = base64.StdEncoding.EncodeToString(kr.Seal([]byte(plain), ad))
		}
		config.WalkSecrets(&spec, func(path string, sec *config.Secret) {
			seal(path, sec.Value)
			*sec = config.Secret{}
		})
		for i := range spec.Sinks {
			sk := &spec.Sinks[i]
			if bare, pw, ok := config.CutURLPassword(sk.URL); ok {
				seal(fmt.Sprintf("sinks[%d].url", i), pw)
				sk.URL = bare
			}
			// Header values are credentials as often as not (an answer
			// redacts them all): sealed, their names left readable.
			for _, name := range sortedKeys(sk.Headers) {
				if v := sk.Headers[name]; v != "" {
					seal(fmt.Sprintf("sinks[%d].headers.%s", i, name), v)
					sk.Headers[name] = ""
				}
			}
		}
	}
	b, err := json.Marshal(sourceRecord{
		V: recordVersion, Name: src.Name, Tenant: src.TenantID,
		Spec: config.EncodeSource(&spec, true), Sealed: sealed,
		Created: src.Created, Updated: src.Updated,
	})
	if err != nil {
		panic("BUG: source: cannot encode a source record: " + err.Error())
	}
	return b
}

// copySpec is a copy of s whose secret-holding slices are its own, so
// sealing can clear them.
func copySpec(s *config.Source) config.Source {
	c := *s
	c.Verify.Secrets = append([]config.Secret(nil), s.Verify.Secrets...)
	c.Sinks = append([]config.Sink(nil), s.Sinks...)
	for i := range c.Sinks {
		sk := &c.Sinks[i]
		if sk.Headers != nil {
			sk.Headers = maps.Clone(sk.Headers)
		}
		// The sections that hold secrets are pointers: sealing clears
		// the copy's, never the served spec's.
		if sk.SASL != nil {
			sasl := *sk.SASL
			sk.SASL = &sasl
		}
		if sk.Auth != nil {
			auth := *sk.Auth
			sk.Auth = &auth
		}
	}
	return c
}

// SecretsState counts a stored source's secrets by how they rest: sealed
// under the current key, under the previous one, or in clear.
type SecretsState struct {
	Current, Previous, Clear int
}

// NeedsRewrap reports whether a rewrap would change the record: it holds
// a secret in clear or under the previous key.
func (s SecretsState) NeedsRewrap() bool { return s.Previous > 0 || s.Clear > 0 }

// decodeSourceRecord reads a stored source record into its spec (secrets
// opened with kr and resolved, defaults applied), without validating it:
// a source stored before a rule existed keeps serving. A sealed secret
// that kr does not open is an error naming the source and the field.
func decodeSourceRecord(tenant, name string, v []byte, dedupeTTL config.Duration, kr *secrets.Keyring) (rec sourceRecord, spec config.Source, st SecretsState, err error) {
	if err := json.Unmarshal(v, &rec); err != nil {
		return rec, spec, st, fmt.Errorf("stored source %q of tenant %q does not decode: %v", name, tenant, err)
	}
	if rec.V != recordVersion || rec.Name != name || rec.Tenant != tenant {
		return rec, spec, st, fmt.Errorf("stored source %q of tenant %q: record version %d names %q of tenant %q", name, tenant, rec.V, rec.Name, rec.Tenant)
	}
	spec, err = config.DecodeSource(rec.Spec)
	if err != nil {
		return rec, spec, st, fmt.Errorf("stored source %q of tenant %q: %v", name, tenant, err)
	}
	if probs := config.ResolveLiteralSecrets(&spec); len(probs) > 0 {
		return rec, spec, st, fmt.Errorf("stored source %q of tenant %q: %v", name, tenant, probs)
	}
	config.WalkSecrets(&spec, func(string, *config.Secret) { st.Clear++ })
	for i := range spec.Sinks {
		if _, _, ok := config.CutURLPassword(spec.Sinks[i].URL); ok {
			st.Clear++
		}
		for _, v := range spec.Sinks[i].Headers {
			if v != "" {
				st.Clear++
			}
		}
	}
	for _, path := range sortedKeys(rec.Sealed) {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("stored source %q of tenant %q: field %s: %s", name, tenant, path, fmt.Sprintf(format, args...))
		}
		blob, err := base64.StdEncoding.DecodeString(rec.Sealed[path])
		if err != nil {
			return rec, spec, st, fail("the sealed value is not base64: %v", err)
		}
		if !kr.Enabled() {
			return rec, spec, st, fail("the value is sealed, but secrets.kek is not set; set the key it was sealed under")
		}
		plain, current, err := kr.Open(blob, secrets.AD{Tenant: tenant, Source: name, Field: path})
		if err != nil {
			return rec, spec, st, fail("%v", err)
		}
		if current {
			st.Current++
		} else {
			st.Previous++
		}
		if err := setSealedField(&spec, path, string(plain)); err != nil {
			return rec, spec, st, fail("%v", err)
		}
	}
	config.DefaultSource(&spec, dedupeTTL)
	spec.TenantID = tenant
	return rec, spec, st, nil
}

// setSealedField puts an opened secret back at its path of spec.
func setSealedField(spec *config.Source, path, plain string) error {
	var i int
	if head, name, ok := strings.Cut(path, ".headers."); ok {
		if !scanIndex(head, "sinks[%d]", &i) || i >= len(spec.Sinks) {
			return fmt.Errorf("the spec has no such element")
		}
		if _, ok := spec.Sinks[i].Headers[name]; !ok {
			return fmt.Errorf("the spec's sink has no header %q to give the sealed value to", name)
		}
		spec.Sinks[i].Headers[name] = plain
		return nil
	}
	if sec := config.SecretAt(spec, path); sec != nil {
		*sec = config.Secret{Ref: plain, Value: plain}
		return nil
	}
	switch {
	case scanIndex(path, "sinks[%d].url", &i):
		if i < len(spec.Sinks) {
			u, ok := config.WithURLPassword(spec.Sinks[i].URL, plain)
			if !ok {
				return fmt.Errorf("the spec's url %q has no user to give the sealed password to", spec.Sinks[i].URL)
			}
			spec.Sinks[i].URL = u
			return nil
		}
	default:
		return fmt.Errorf("no such secret field (or the spec has no such element)")
	}
	return fmt.Errorf("the spec has no such element")
}

// scanIndex reports whether path is format with one index, into i.
func scanIndex(path, format string, i *int) bool {
	n, err := fmt.Sscanf(path, format, i)
	return err == nil && n == 1 && fmt.Sprintf(format, *i) == path
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
