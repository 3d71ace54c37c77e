package verify

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/ankusa/ankusa/config"
)

// presetsYAML is the catalogue, one file: presets.yaml.
//
//go:embed presets.yaml
var presetsYAML []byte

// Families are the schemes a preset may name.
var Families = []string{"hmac", "standardwebhooks", "twilio", "ed25519", "ecdsa", "token", "basic", "body-hmac", "jws", "rsa"}

// builder builds one family's verifier from a preset, the source's verify
// section, its resolved secrets and verify.tolerance (zero when unset).
type builder func(p *Preset, c config.Verify, secrets []string, tol time.Duration) (Verifier, error)

func builderFor(family string) (builder, bool) {
	switch family {
	case "hmac":
		return func(p *Preset, c config.Verify, s []string, tol time.Duration) (Verifier, error) {
			return newHMACFamily(p, c, s, tol)
		}, true
	case "standardwebhooks":
		return newSWFamily, true
	case "twilio":
		return newTwilioFamily, true
	case "ed25519":
		return newEd25519Family, true
	case "ecdsa":
		return newECDSAFamily, true
	case "token":
		return newTokenFamily, true
	case "basic":
		return newBasicFamily, true
	case "body-hmac":
		return newBodyHMACFamily, true
	case "jws":
		return newJWSFamily, true
	case "rsa":
		return newRSAFamily, true
	}
	return nil, false
}

// signsURL reports whether a preset's scheme signs the request's URL, the
// only ones verify.url means anything to.
func (p *Preset) signsURL() bool {
	return p.Family == "twilio" || strings.Contains(p.Signed, "{url}")
}

var nameRE = regexp.MustCompile(`^[a-z0-9_-]+$`)

// catalogue is presets.yaml parsed and checked once.
var catalogue = sync.OnceValues(func() (map[string]*Preset, error) { return loadPresets(presetsYAML) })

// loadPresets parses a catalogue and checks every entry's shape (its
// family's build is checked by the tests, with test secrets).
func loadPresets(data []byte) (map[string]*Preset, error) {
	var list []Preset
	if err := yaml.NewDecoder(bytes.NewReader(data), yaml.DisallowUnknownField()).Decode(&list); err != nil {
		return nil, fmt.Errorf("presets.yaml: %w", err)
	}
	out := make(map[string]*Preset, len(list))
	for i := range list {
		p := &list[i]
		if !nameRE.MatchString(p.Name) {
			return nil, fmt.Errorf("presets.yaml: entry %d: name %q must be [a-z0-9_-]+", i+1, p.Name)
		}
		if _, dup := out[p.Name]; dup {
			return nil, fmt.Errorf("presets.yaml: preset %q is listed twice", p.Name)
		}
		if p.Name == "none" || p.Name == "hmac" {
			return nil, fmt.Errorf("presets.yaml: preset %q: the name is a built-in verifier's", p.Name)
		}
		if _, ok := builderFor(p.Family); !ok {
			return nil, fmt.Errorf("presets.yaml: preset %q: family %q is not one of %v", p.Name, p.Family, Families)
		}
		if p.Title == "" {
			return nil, fmt.Errorf("presets.yaml: preset %q: title is required", p.Name)
		}
		if !strings.HasPrefix(p.Docs, "https://") {
			return nil, fmt.Errorf("presets.yaml: preset %q: docs must be an https address", p.Name)
		}
		if err := checkFields(p); err != nil {
			return nil, fmt.Errorf("presets.yaml: preset %q: %w", p.Name, err)
		}
		for _, s := range []struct{ field, v string }{{"id", p.ID}, {"event_type", p.EventType}} {
			if s.v != "" {
				if _, err := parseSource(s.field, s.v); err != nil {
					return nil, fmt.Errorf("presets.yaml: preset %q: %w", p.Name, err)
				}
			}
		}
		out[p.Name] = p
	}
	return out, nil
}

// Presets lists the catalogue by name. It fails only when presets.yaml
// does not load, which the package's tests rule out.
func Presets() ([]Preset, error) {
	m, err := catalogue()
	if err != nil {
		return nil, err
	}
	out := make([]Preset, 0, len(m))
	for _, p := range m {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// LookupPreset returns the preset a verify.type names.
func LookupPreset(name string) (Preset, bool) {
	m, err := catalogue()
	if err != nil {
		return Preset{}, false
	}
	p, ok := m[name]
	if !ok {
		return Preset{}, false
	}
	return *p, true
}

// Known reports whether name is a verifier type New builds: none, hmac or
// a preset.
func Known(name string) bool {
	if name == "none" || name == "hmac" {
		return true
	}
	_, ok := LookupPreset(name)
	return ok
}

// Types lists every verifier type: none, hmac and the presets' names.
func Types() []string {
	out := []string{"none", "hmac"}
	ps, _ := Presets()
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// SignsURL reports whether a verifier type signs the request's URL (so
// that verify.url means something to it).
func SignsURL(name string) bool {
	p, ok := LookupPreset(name)
	return ok && p.signsURL()
}

// AutoDedupeKey is the dedupe key `dedupe.key: auto` stands for with a
// verifier type: its preset's delivery id (header:NAME or json:PATH), or
// ok false when it has none.
func AutoDedupeKey(name string) (spec string, ok bool) {
	p, found := LookupPreset(name)
	if !found || p.ID == "" {
		return "", false
	}
	return p.ID, true
}

// AutoDedupeTypes lists the verifier types whose preset has an id, for
// the error of an auto key on any other.
func AutoDedupeTypes() []string {
	var out []string
	ps, _ := Presets()
	for _, p := range ps {
		if p.ID != "" {
			out = append(out, p.Name)
		}
	}
	return out
}

// buildPreset builds a preset's verifier; errors name the preset.
func buildPreset(p *Preset, c config.Verify, secrets []string, tol time.Duration) (Verifier, error) {
	if c.Tolerance != 0 && p.Timestamp == nil && p.Family != "standardwebhooks" {
		return nil, fmt.Errorf("verify.tolerance: preset %q signs no timestamp, so there is nothing to hold to a tolerance", p.Name)
	}
	if c.URL != "" && !p.signsURL() {
		return nil, fmt.Errorf("verify.url: preset %q does not sign the request's URL (only twilio and templates with {url} do)", p.Name)
	}
	for _, k := range []struct{ key, val string }{
		{"header", c.Header}, {"prefix", c.Prefix}, {"algorithm", c.Algorithm}, {"encoding", c.Encoding},
		{"timestamp_header", c.TimestampHeader}, {"signed_content", c.SignedContent},
	} {
		if k.val != "" {
			// A preset fixes its scheme: a key that would change it
			// belongs to the generic verifier, and ignoring it would
			// verify something else than the operator wrote.
			return nil, fmt.Errorf("verify.%s: preset %q fixes its scheme; %s is a key of type hmac", k.key, p.Name, k.key)
		}
	}
	if signsWebhookID := strings.Contains(p.Signed, "{webhook_id}"); signsWebhookID && c.WebhookID == "" {
		return nil, fmt.Errorf("verify.webhook_id: required by preset %q (it signs the id the provider gave the subscription)", p.Name)
	} else if !signsWebhookID && c.WebhookID != "" {
		return nil, fmt.Errorf("verify.webhook_id: preset %q signs no webhook id (only presets whose template has {webhook_id} read it)", p.Name)
	}
	if c.AllowSHA1 && p.Name != "github" {
		return nil, fmt.Errorf("verify.allow_sha1: only the github verifier has a SHA-1 signature to allow")
	}
	b, _ := builderFor(p.Family)
	v, err := b(p, c, secrets, tol)
	if err != nil {
		if strings.HasPrefix(err.Error(), "verify.") {
			return nil, err
		}
		return nil, fmt.Errorf("verify.type: preset %q: %w", p.Name, err)
	}
	if p.Name == "github" && c.AllowSHA1 {
		v, err = withGitHubSHA1(v, secrets)
		if err != nil {
			return nil, err
		}
	}
	return withPreset(v, p, c, secrets)
}

// familyFields are the scheme fields each family reads (name, title,
// family, docs, notes, event_type and handshake are every preset's).
var familyFields = map[string][]string{
	"hmac":             {"header", "prefix", "list", "algorithm", "encoding", "key", "signed", "timestamp", "id"},
	"standardwebhooks": {"header", "timestamp", "id"},
	"twilio":           {"header", "algorithm", "encoding", "key", "id"},
	"ed25519":          {"header", "encoding", "signed", "timestamp", "id"},
	"ecdsa":            {"header", "encoding", "signed", "timestamp", "id"},
	"token":            {"header", "prefix", "signature", "id"},
	"basic":            {"header", "id"},
	"body-hmac":        {"signature", "single", "algorithm", "encoding", "key", "signed", "timestamp", "id"},
	"jws":              {"header", "algorithm", "key", "timestamp", "id", "claim", "issuer"},
	"rsa":              {"header", "algorithm", "encoding", "signed", "timestamp", "id", "alg_header"},
}

// checkFields refuses a scheme field the preset's family does not read:
// data that would be silently ignored is a mistake in the data.
func checkFields(p *Preset) error {
	set := map[string]bool{
		"header": p.Header != "", "prefix": p.Prefix != "", "list": p.List != nil,
		"signature": p.Signature != "", "single": p.Single != "", "algorithm": p.Algorithm != "", "encoding": p.Encoding != "",
		"key": p.Key != "", "signed": p.Signed != "", "timestamp": p.Timestamp != nil, "id": p.ID != "",
		"claim": p.Claim != "", "issuer": p.Issuer != "", "alg_header": p.AlgHeader != "",
	}
	allowed := familyFields[p.Family]
	for _, f := range []string{"header", "prefix", "list", "signature", "single", "algorithm", "encoding", "key", "signed", "timestamp", "id", "claim", "issuer", "alg_header"} {
		if set[f] && !slices.Contains(allowed, f) {
			return fmt.Errorf("%s: family %s does not read it (it reads %s)", f, p.Family, strings.Join(allowed, ", "))
		}
	}
	if p.Family != "rsa" && (strings.Contains(p.Signed, "{webhook_id}") || strings.Contains(p.Signed, "{crc32}")) {
		return fmt.Errorf("signed: {webhook_id} and {crc32} are family rsa's placeholders")
	}
	return nil
}
