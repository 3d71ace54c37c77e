package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
)

// Writer is a store the admin API can write: Persistent (and, later,
// the Redis store). The static store is not one: every write is 409
// source_store_read_only.
type Writer interface {
	Store
	PutSource(w SourceWrite) (*Source, error)
	DeleteSource(w SourceDelete) (*Source, error)
	PutRoute(w RouteWrite) (*Route, []string, error)
	DeleteRoute(w RouteDelete) (*Route, error)
}

var _ Writer = (*Persistent)(nil)

// SourceWrite is a create (Create true: POST, the name must be free) or an
// update (PUT of an existing source) of one source of Tenant.
type SourceWrite struct {
	Tenant string
	Create bool
	Doc    config.SourceDoc
	// Audit is the audit row's principal and action; the store fills in the
	// rest (time, tenant, entity, spec digest, outcome).
	Audit meta.AuditRow
	// Check, when not nil, is called with the write reserved (no other
	// write to the source runs) and the old spec (nil on a create) and the
	// new one; an error it returns refuses the write, as it is.
	Check func(old *Source, next *config.Source) error
	// After, when not nil, is called once the write is published, with the
	// source still reserved: a write that removed sinks dead-letters their
	// rows there, before the name can be written again.
	After func(src *Source)
}

// SourceDelete removes one source of Tenant.
type SourceDelete struct {
	Tenant, Name string
	Audit        meta.AuditRow
	// Check is called as SourceWrite.Check is, with the source.
	Check func(old *Source) error
	// After is called as SourceWrite.After is, with the removed source.
	After func(old *Source)
}

// afterOf binds an After hook to its source; nil stays nil.
func afterOf(after func(*Source), src *Source) func() {
	if after == nil {
		return nil
	}
	return func() { after(src) }
}

// PutSource creates or updates a source: the document is validated by the
// file's rules (config.ValidateSource, the same messages), its secrets are
// the values given (an update that omits one keeps the stored one, and a
// sink given without an id keeps the id of the stored sink at its place if
// it has the same type, so its pending hooks stay its own), and the source
// serves the next request once PutSource returns.
func (p *Persistent) PutSource(w SourceWrite) (*Source, error) {
	src, err := p.putSource(w)
	return src, counted("source", err)
}

func (p *Persistent) putSource(w SourceWrite) (*Source, error) {
	doc := w.Doc
	if !doc.HasName {
		if !w.Create {
			return nil, refuse(CodeInvalid, "name: required")
		}
		doc.Name, doc.HasName = mintText("src-"), true
	}
	spec := doc.Spec
	if spec.TenantID != "" && spec.TenantID != w.Tenant {
		return nil, refuse(CodeInvalid, "tenant_id: %q, but the path names tenant %q; a source belongs to the tenant of its path", spec.TenantID, w.Tenant)
	}
	spec.TenantID = w.Tenant
	if probs := append(config.ResolveLiteralSecrets(&spec), config.RefuseNodeFiles(&spec)...); len(probs) > 0 {
		return nil, refuse(CodeInvalid, "%s", probs.Error())
	}
	if !config.NameRE.MatchString(doc.Name) {
		return nil, refuse(CodeInvalid, "sources.%s: source name must match %s", doc.Name, config.NameRE)
	}
	if err := p.beforeWrite(); err != nil {
		return nil, err
	}
	release := p.reserve("source:" + doc.Name)
	src, err := p.putSourceReserved(w, doc.Name, spec)
	if err != nil {
		release(nil, nil)
		return nil, err
	}
	release(p.ifNewer(src.Version, func(s *Snapshot) *Snapshot { return s.withSource(src) }), afterOf(w.After, src))
	return src, nil
}

func (p *Persistent) putSourceReserved(w SourceWrite, name string, spec config.Source) (*Source, error) {
	old := p.Snapshot().Lookup([]byte(name))
	switch {
	case w.Create && old != nil:
		return nil, refuse(CodeExists, "a source named %q exists; source names are global", name)
	case !w.Create && (old == nil || old.TenantID != w.Tenant):
		return nil, refuse(CodeNotFound, "no source named %q", name)
	case !w.Create && old.FromConfig:
		return nil, refuse(CodeFromConfig, "source %q comes from the config file; change it there", name)
	}
	if old != nil {
		inheritSinkIDs(&spec, &old.Spec)
	}
	config.DefaultSource(&spec, p.o.Config.Dedupe.TTL)
	if old != nil {
		if probs := keepSecrets(&spec, &old.Spec); len(probs) > 0 {
			return nil, refuse(CodeInvalid, "sources.%s.%s", name, strings.Join(probs, "; sources."+name+"."))
		}
	}
	for i := range spec.Sinks {
		if _, pw, ok := config.CutURLPassword(spec.Sinks[i].URL); ok && pw == config.Redacted {
			return nil, refuse(CodeInvalid, "sources.%s.sinks[%d].url: the password %q stands for the stored one only in the stored URL unchanged (same sink id, user, host and path); give the password", name, i, config.Redacted)
		}
	}
	if probs := config.ValidateSource(name, &spec, p.o.Context); len(probs) > 0 {
		return nil, refuse(CodeInvalid, "%s", probs.Error())
	}
	if w.Check != nil {
		if err := w.Check(old, &spec); err != nil {
			return nil, err
		}
	}
	now := p.o.Now().UTC()
	src := Build(name, spec, int64(p.o.Config.Limits.MaxBodyBytes), false)
	src.Created, src.Updated = now, now
	if old != nil {
		src.Created = old.Created
	}
	audit := w.Audit
	audit.At, audit.Tenant, audit.Entity, audit.Outcome = now, w.Tenant, "source/"+name, "ok"
	audit.SpecSHA256 = specDigest(config.EncodeSource(&spec, false))
	audit.Event = meta.Event{Type: meta.EventType("source", verb(w.Create, "created", "updated")), Subject: name, Data: SourceEventData(src)}
	var expect uint64
	if old != nil {
		expect = old.Version
	}
	rec := encodeSourceRecord(src, p.o.Keyring)
	version, err := p.o.Backend.Commit([]Op{{Kind: PutSource, Tenant: w.Tenant, Name: name, Record: rec, Expect: expect}}, audit)
	if err != nil {
		return nil, unavailable(err)
	}
	src.Version = version
	return src, nil
}

// DeleteSource removes a source: the next request to it is a 404.
func (p *Persistent) DeleteSource(w SourceDelete) (*Source, error) {
	src, err := p.deleteSource(w)
	return src, counted("source", err)
}

func (p *Persistent) deleteSource(w SourceDelete) (*Source, error) {
	if err := p.beforeWrite(); err != nil {
		return nil, err
	}
	release := p.reserve("source:" + w.Name)
	old := p.Snapshot().Lookup([]byte(w.Name))
	var version uint64
	err := func() error {
		switch {
		case old == nil || old.TenantID != w.Tenant:
			return refuse(CodeNotFound, "no source named %q", w.Name)
		case old.FromConfig:
			return refuse(CodeFromConfig, "source %q comes from the config file; remove it there", w.Name)
		}
		if w.Check != nil {
			if err := w.Check(old); err != nil {
				return err
			}
		}
		audit := w.Audit
		audit.At, audit.Tenant, audit.Entity, audit.Outcome = p.o.Now().UTC(), w.Tenant, "source/"+w.Name, "ok"
		audit.Event = meta.Event{Type: meta.EventType("source", "deleted"), Subject: w.Name, Data: SourceEventData(old)}
		v, err := p.o.Backend.Commit([]Op{{Kind: DeleteSource, Tenant: w.Tenant, Name: w.Name, Expect: old.Version}}, audit)
		if err != nil {
			return unavailable(err)
		}
		version = v
		return nil
	}()
	if err != nil {
		release(nil, nil)
		return nil, err
	}
	release(p.ifNewer(version, func(s *Snapshot) *Snapshot { return p.retire(s, w.Name) }), afterOf(w.After, old))
	return old, nil
}

// retire is s less the source name, which is kept for LookupForDelivery
// RetiredFor; p.mu is held.
func (p *Persistent) retire(s *Snapshot, name string) *Snapshot {
	if old := s.Lookup([]byte(name)); old != nil {
		p.retired = append(p.retired, retiredSource{src: old, at: p.o.Now()})
	}
	return s.withoutSource(name)
}

// SourceEventData is a source as its lifecycle events carry it: its name,
// its spec with every secret redacted (config.RedactSource) and when it
// was created and last updated.
func SourceEventData(src *Source) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"name":`)
	name, _ := json.Marshal(src.Name)
	b.Write(name)
	if spec := config.RedactSource(&src.Spec); len(spec) > 2 {
		b.WriteByte(',')
		b.Write(spec[1 : len(spec)-1])
	}
	if !src.Created.IsZero() {
		fmt.Fprintf(&b, `,"created_at":%q,"updated_at":%q`, src.Created.UTC().Format(time.RFC3339Nano), src.Updated.UTC().Format(time.RFC3339Nano))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// verb is created for a create, else updated.
func verb(create bool, created, updated string) string {
	if create {
		return created
	}
	return updated
}

// inheritSinkIDs gives each sink of next written without an id the id of
// old's sink at the same place, when that one has the same type.
func inheritSinkIDs(next, old *config.Source) {
	for i := range next.Sinks {
		if next.Sinks[i].ID == "" && i < len(old.Sinks) && old.Sinks[i].Type == next.Sinks[i].Type {
			next.Sinks[i].ID = old.Sinks[i].ID
		}
	}
}

// keepSecrets fills the secrets next omits from old: the verifier's when
// the verifier type is the same, and each sink's from old's sink of the
// same id.
func keepSecrets(next, old *config.Source) (probs []string) {
	if next.Verify.Type == old.Verify.Type {
		if !next.Verify.Secret.IsSet() && len(next.Verify.Secrets) == 0 {
			next.Verify.Secret, next.Verify.Secrets = old.Verify.Secret, old.Verify.Secrets
		}
	}
	for i := range next.Sinks {
		sk := &next.Sinks[i]
		for _, o := range old.Sinks {
			if o.ID != sk.ID {
				continue
			}
			// Each secret the update leaves out is the stored one, where
			// the update keeps the section that holds it: the sink's
			// (signing) secret by the sink's id; a broker's password or
			// token only while the update names the same brokers (a
			// password never goes to another host) and the same way in.
			config.WalkSinkSecrets(&o, func(path string, sec *config.Secret) {
				dst := config.SinkSecretAt(sk, path)
				switch {
				case dst == nil || dst.IsSet() || !sameCredentialUse(sk, &o, path):
				case path != "secret" && brokerTarget(sk) != brokerTarget(&o):
					probs = append(probs, fmt.Sprintf("sinks[%d].%s: the stored one is kept only while the sink names the same brokers; give it again", i, path))
				default:
					*dst = *sec
				}
			})
			// A URL given back as an answer showed it (its password
			// redacted) keeps the stored password, if the rest of it is
			// the stored URL's: the password never goes to another host.
			if bare, pw, ok := config.CutURLPassword(sk.URL); ok && pw == config.Redacted {
				if storedBare, stored, ok := config.CutURLPassword(o.URL); ok && storedBare == bare {
					sk.URL, _ = config.WithURLPassword(bare, stored)
				}
			}
		}
	}
	return probs
}

// sameCredentialUse reports whether the update's sink still signs in the
// way the stored secret at path serves: a NATS password with the same
// user and no token or credentials file, a token with neither of those.
func sameCredentialUse(next, old *config.Sink, path string) bool {
	switch path {
	case "auth.password":
		return next.Auth.Token.Ref == "" && next.Auth.CredsFile == "" && next.Auth.Username == old.Auth.Username
	case "auth.token":
		return next.Auth.Username == "" && next.Auth.CredsFile == ""
	}
	return true
}

// brokerTarget is what a broker sink connects to, for comparing two specs:
// the sorted seed brokers of a Kafka sink, the sorted hosts of a NATS
// sink's url (without credentials).
func brokerTarget(sk *config.Sink) string {
	var hosts []string
	switch sk.Type {
	case "kafka":
		hosts = slices.Clone(sk.Brokers)
	case "nats":
		for _, u := range strings.Split(sk.URL, ",") {
			u = strings.TrimSpace(u)
			if at := strings.LastIndexByte(u, '@'); at >= 0 {
				if i := strings.Index(u, "://"); i >= 0 && i < at {
					u = u[:i+3] + u[at+1:]
				}
			}
			hosts = append(hosts, u)
		}
	}
	slices.Sort(hosts)
	return strings.Join(hosts, ",")
}

// SecretsSet lists the paths of the secret fields of spec that hold a
// value ("verify.secret", "sinks[0].secret", "sinks[0].url" for a URL's
// password): what an answer shows of them.
func SecretsSet(spec *config.Source) []string {
	out := []string{}
	config.WalkSecrets(spec, func(path string, _ *config.Secret) { out = append(out, path) })
	for i := range spec.Sinks {
		if _, _, ok := config.CutURLPassword(spec.Sinks[i].URL); ok {
			out = append(out, fmt.Sprintf("sinks[%d].url", i))
		}
	}
	return out
}
