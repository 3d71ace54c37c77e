package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// A source written through the admin API, and kept by a source store, is
// the JSON form of its YAML spec: the same keys (the yaml tags of Source),
// plus "name". JSON is YAML, so it is read by the schema walk of the file
// (schema.go): an unknown key, or a value that does not decode, is named by
// its path exactly as check-config names it.

// SourceDoc is one source document: a name (HasName false when the
// document gave none) and its spec.
type SourceDoc struct {
	Name    string
	HasName bool
	Spec    Source
}

// ParseSourceDoc reads a source document. Problems name keys relative to
// the source ("verify.type: unknown key"); the spec comes back with every
// key that decoded and no defaults applied.
func ParseSourceDoc(data []byte) (SourceDoc, Problems) {
	var doc SourceDoc
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return doc, Problems{"cannot parse the source: " + oneLine(yaml.FormatError(err, false, false))}
	}
	w := walker{anchors: anchorSet{}}
	var body ast.Node
	if len(file.Docs) > 0 {
		body = file.Docs[0].Body
	}
	if len(file.Docs) != 1 || body == nil {
		return doc, Problems{"cannot parse the source: the body must be one JSON object"}
	}
	ast.Walk(w.anchors, body)
	m, ok := w.resolve(body).(*ast.MappingNode)
	if !ok {
		if _, pair := w.resolve(body).(*ast.MappingValueNode); !pair {
			return doc, Problems{"cannot parse the source: the body must be a JSON object of the source's keys"}
		}
		m = &ast.MappingNode{BaseNode: &ast.BaseNode{}, Values: []*ast.MappingValueNode{w.resolve(body).(*ast.MappingValueNode)}}
	}
	var rest []*ast.MappingValueNode
	for _, mv := range m.Values {
		if keyText(mv.Key) != "name" {
			rest = append(rest, mv)
			continue
		}
		s, isString := w.resolve(mv.Value).(*ast.StringNode)
		if !isString {
			w.probs.add("name: must be a string")
			continue
		}
		doc.Name, doc.HasName = s.Value, true
	}
	m.Values = rest
	w.object(m, reflect.TypeFor[Source](), "")
	if err := yaml.NodeToValue(m, &doc.Spec); err != nil {
		w.probs.add("invalid source: %s", oneLine(yaml.FormatError(err, false, false)))
	}
	sort.Strings(w.probs)
	return doc, w.probs
}

// DefaultSource fills a source's unset keys as loading a file does: the
// tenant, the failure mode, the sinks (ids included) and the keys of
// ApplySourceDefaults.
func DefaultSource(s *Source, dedupeTTL Duration) {
	setString(&s.TenantID, DefaultTenant)
	setString(&s.OnVerifyFailure, "reject")
	applySinkDefaults(s.Sinks)
	ApplySourceDefaults(s, dedupeTTL)
}

// ResolveLiteralSecrets takes every secret of a source written through the
// admin API as the secret itself. An env: or file: reference is refused:
// those name the node's own environment and files, which an API client
// must not make the node read.
func ResolveLiteralSecrets(s *Source) Problems {
	var p Problems
	each := func(path string, sec *Secret) {
		if strings.HasPrefix(sec.Ref, "env:") || strings.HasPrefix(sec.Ref, "file:") {
			p.add("%s: env: and file: references are for the config file; the admin API takes the secret itself", path)
			return
		}
		sec.Value = sec.Ref
	}
	WalkSecrets(s, each)
	return p
}

// RefuseNodeFiles names every key of a source written through the admin
// API that would have the node read one of its own files (a sink's
// tls.ca_file, tls.cert_file, tls.key_file, auth.creds_file): like env:
// and file: references, file paths are for the config file, which the
// operator writes; an API client must not make the node read, or present
// to a broker of its choosing, the node's files.
func RefuseNodeFiles(s *Source) Problems {
	var p Problems
	for i := range s.Sinks {
		sk := &s.Sinks[i]
		at := fmt.Sprintf("sinks[%d].", i)
		var files [4]string // tls.ca_file, tls.cert_file, tls.key_file, auth.creds_file
		if t := sk.TLS; t != nil {
			files[0], files[1], files[2] = t.CAFile, t.CertFile, t.KeyFile
		}
		if a := sk.Auth; a != nil {
			files[3] = a.CredsFile
		}
		for i, key := range []string{"tls.ca_file", "tls.cert_file", "tls.key_file", "auth.creds_file"} {
			if v := files[i]; v != "" {
				p.add("%s%s: names a file of the node; file paths are for the config file, the admin API takes none", at, key)
			}
		}
	}
	return p
}

// WalkSecrets calls fn with the path and the address of every secret field
// of s that is set, in a fixed order.
func WalkSecrets(s *Source, fn func(path string, sec *Secret)) {
	if s.Verify.Secret.IsSet() {
		fn("verify.secret", &s.Verify.Secret)
	}
	for i := range s.Verify.Secrets {
		if s.Verify.Secrets[i].IsSet() {
			fn(fmt.Sprintf("verify.secrets[%d]", i), &s.Verify.Secrets[i])
		}
	}
	// The handshake's token (Meta's hub.verify_token) proves a
	// subscription is the operator's: resolved, sealed and redacted like
	// the signing secrets.
	if s.Verify.HandshakeToken.IsSet() {
		fn("verify.handshake_token", &s.Verify.HandshakeToken)
	}
	for i := range s.Sinks {
		at := fmt.Sprintf("sinks[%d].", i)
		WalkSinkSecrets(&s.Sinks[i], func(path string, sec *Secret) { fn(at+path, sec) })
	}
}

// WalkSinkSecrets calls fn with the path under the sink ("secret",
// "sasl.password") and the address of every secret field of sk that is
// set, in a fixed order.
func WalkSinkSecrets(sk *Sink, fn func(path string, sec *Secret)) {
	for _, f := range sinkSecretFields {
		if sec := f.at(sk); sec != nil && sec.IsSet() {
			fn(f.name, sec)
		}
	}
}

// sinkSecretFields are a sink's secret fields, by their path under the
// sink; at returns nil when the field's section is absent.
var sinkSecretFields = []struct {
	name string
	at   func(*Sink) *Secret
}{
	{"secret", func(s *Sink) *Secret { return &s.Secret }},
	{"sasl.password", func(s *Sink) *Secret {
		if s.SASL == nil {
			return nil
		}
		return &s.SASL.Password
	}},
	{"auth.password", func(s *Sink) *Secret {
		if s.Auth == nil {
			return nil
		}
		return &s.Auth.Password
	}},
	{"auth.token", func(s *Sink) *Secret {
		if s.Auth == nil {
			return nil
		}
		return &s.Auth.Token
	}},
}

// SecretAt returns the secret field of s at path (as WalkSecrets names
// it), set or not; nil when s has no such field (an index past the end, a
// section that is absent).
func SecretAt(s *Source, path string) *Secret {
	switch path {
	case "verify.secret":
		return &s.Verify.Secret
	case "verify.handshake_token":
		return &s.Verify.HandshakeToken
	}
	var i int
	var rest string
	if n, err := fmt.Sscanf(path, "verify.secrets[%d]", &i); err == nil && n == 1 && fmt.Sprintf("verify.secrets[%d]", i) == path {
		if i >= 0 && i < len(s.Verify.Secrets) {
			return &s.Verify.Secrets[i]
		}
		return nil
	}
	head, rest, ok := strings.Cut(path, "].")
	if !ok {
		return nil
	}
	if n, err := fmt.Sscanf(head+"]", "sinks[%d]", &i); err != nil || n != 1 || fmt.Sprintf("sinks[%d]", i) != head+"]" || i < 0 || i >= len(s.Sinks) {
		return nil
	}
	return SinkSecretAt(&s.Sinks[i], rest)
}

// SinkSecretAt returns the secret field of sk at path under the sink (as
// WalkSinkSecrets names it), set or not; nil when sk has no such field or
// its section is absent.
func SinkSecretAt(sk *Sink, path string) *Secret {
	for _, f := range sinkSecretFields {
		if f.name == path {
			return f.at(sk)
		}
	}
	return nil
}

// EncodeSource writes the JSON form of a source spec: its yaml keys, zero
// values left out, durations as Go durations, sizes as bytes. With secrets
// false, secret fields are left out (an answer of the admin API, or what
// an audit row hashes); with secrets true they are written as given (what
// a source store keeps).
func EncodeSource(s *Source, secrets bool) []byte {
	m := omitSecrets
	if secrets {
		m = keepSecrets
	}
	var b bytes.Buffer
	encodeValue(&b, reflect.ValueOf(*s), m)
	return b.Bytes()
}

// Redacted is what RedactSource writes in place of a secret.
const Redacted = "redacted"

// RedactSource writes the JSON form of a source spec as EncodeSource does,
// with every secret redacted but still there: each secret field, each
// sink header's value and the password of a url's user info read
// "redacted", so which fields are set shows and no credential does (a
// lifecycle event's data).
func RedactSource(s *Source) []byte {
	var b bytes.Buffer
	encodeValue(&b, reflect.ValueOf(*s), redactSecrets)
	return b.Bytes()
}

// RedactURL is u with the password of its user info redacted and the
// rest byte for byte; u as it is when it has none. It reads the user info
// as net/url does (between "://" and the last "@" before the first "/",
// "?" or "#") without parsing the rest, so that a url template, whose
// fields net/url refuses in a host, is redacted too.
func RedactURL(u string) string {
	bare, _, ok := CutURLPassword(u)
	if !ok {
		return u
	}
	redacted, _ := WithURLPassword(bare, Redacted)
	return redacted
}

// CutURLPassword splits the password out of a URL's user info ("amqp://
// user:pass@host/" → "amqp://user@host/", "pass"), reading the user info
// as RedactURL does; ok is false when the URL has none.
func CutURLPassword(u string) (bare, password string, ok bool) {
	i := strings.Index(u, "://")
	if i < 0 {
		return u, "", false
	}
	auth := u[i+3:]
	if j := strings.IndexAny(auth, "/?#"); j >= 0 {
		auth = auth[:j]
	}
	at := strings.LastIndexByte(auth, '@')
	if at < 0 {
		return u, "", false
	}
	colon := strings.IndexByte(auth[:at], ':')
	if colon < 0 {
		return u, "", false
	}
	start := i + 3 + colon // the ':' before the password
	end := i + 3 + at      // the '@'
	return u[:start] + u[end:], u[start+1 : end], true
}

// WithURLPassword gives a URL's user the password CutURLPassword took;
// false when the URL has no user, or one with a password already.
func WithURLPassword(u, password string) (string, bool) {
	i := strings.Index(u, "://")
	if i < 0 {
		return u, false
	}
	auth := u[i+3:]
	if j := strings.IndexAny(auth, "/?#"); j >= 0 {
		auth = auth[:j]
	}
	at := strings.LastIndexByte(auth, '@')
	if at < 0 || strings.IndexByte(auth[:at], ':') >= 0 {
		return u, false
	}
	end := i + 3 + at
	return u[:end] + ":" + password + u[end:], true
}

// secretMode is how encodeValue writes secrets.
type secretMode uint8

const (
	omitSecrets secretMode = iota
	keepSecrets
	redactSecrets
)

var (
	durationType = reflect.TypeFor[Duration]()
	secretType   = reflect.TypeFor[Secret]()
)

func encodeValue(b *bytes.Buffer, v reflect.Value, m secretMode) {
	switch {
	case v.Type() == durationType:
		writeJSONString(b, time.Duration(v.Int()).String())
	case v.Type() == secretType && m == redactSecrets:
		writeJSONString(b, Redacted)
	case v.Type() == secretType:
		writeJSONString(b, v.Interface().(Secret).Ref)
	case v.Kind() == reflect.Pointer:
		encodeValue(b, v.Elem(), m)
	case v.Kind() == reflect.Struct:
		encodeStruct(b, v, m)
	case v.Kind() == reflect.Slice:
		b.WriteByte('[')
		n := 0
		for i := 0; i < v.Len(); i++ {
			if v.Index(i).Type() == secretType && m == omitSecrets {
				continue
			}
			if n++; n > 1 {
				b.WriteByte(',')
			}
			encodeValue(b, v.Index(i), m)
		}
		b.WriteByte(']')
	case v.Kind() == reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k.String())
			b.WriteByte(':')
			encodeValue(b, v.MapIndex(k), m)
		}
		b.WriteByte('}')
	default:
		out, err := json.Marshal(v.Interface())
		if err != nil {
			panic("BUG: config: cannot encode a source field: " + err.Error())
		}
		b.Write(out)
	}
}

func encodeStruct(b *bytes.Buffer, v reflect.Value, m secretMode) {
	b.WriteByte('{')
	n := 0
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		f := v.Field(i)
		if name == "" || name == "-" || f.IsZero() {
			continue
		}
		if m == omitSecrets && (f.Type() == secretType || f.Type() == reflect.TypeFor[[]Secret]()) {
			continue
		}
		if n++; n > 1 {
			b.WriteByte(',')
		}
		writeJSONString(b, name)
		b.WriteByte(':')
		switch {
		case m != keepSecrets && t == sinkType && name == "url":
			writeJSONString(b, RedactURL(f.String()))
		case m == redactSecrets && t == sinkType && name == "headers":
			redacted := map[string]string{}
			for _, k := range f.MapKeys() {
				redacted[k.String()] = Redacted
			}
			encodeValue(b, reflect.ValueOf(redacted), m)
		default:
			encodeValue(b, f, m)
		}
	}
	b.WriteByte('}')
}

var sinkType = reflect.TypeFor[Sink]()

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic("BUG: config: cannot encode a string: " + err.Error())
	}
	b.Truncate(b.Len() - 1) // Encode's newline
}

// DecodeSource reads what EncodeSource wrote (secrets included), with
// encoding/json: a store reads every record at boot, and the schema walk
// of ParseSourceDoc, which names problems for people, costs a hundred
// times more. A key the spec does not have, or a value of the wrong type,
// is an error naming its path.
func DecodeSource(data []byte) (Source, error) {
	var s Source
	err := decodeValue(json.RawMessage(data), reflect.ValueOf(&s).Elem(), "")
	return s, err
}

var sizeType = reflect.TypeFor[Size]()

func decodeValue(raw json.RawMessage, v reflect.Value, path string) error {
	switch {
	case v.Type() == durationType:
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		d, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		v.SetInt(int64(d))
	case v.Type() == secretType:
		var ref string
		if err := json.Unmarshal(raw, &ref); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		v.Set(reflect.ValueOf(Secret{Ref: ref}))
	case v.Type() == sizeType:
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		v.SetInt(n)
	case v.Kind() == reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return decodeValue(raw, v.Elem(), path)
	case v.Kind() == reflect.Struct:
		return decodeStruct(raw, v, path)
	case v.Kind() == reflect.Slice:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		v.Set(reflect.MakeSlice(v.Type(), len(items), len(items)))
		for i, item := range items {
			if err := decodeValue(item, v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	default:
		if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
	}
	return nil
}

func decodeStruct(raw json.RawMessage, v reflect.Value, path string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	t := v.Type()
	index := make(map[string]int, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			index[name] = i
		}
	}
	for name, f := range fields {
		i, ok := index[name]
		if !ok {
			return fmt.Errorf("%s: unknown key", joinPath(path, name))
		}
		if err := decodeValue(f, v.Field(i), joinPath(path, name)); err != nil {
			return err
		}
	}
	return nil
}
