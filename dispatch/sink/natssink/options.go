package natssink

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
)

// Options configure a Sink.
type Options struct {
	// Spec is the sink's config, defaults applied (config.Load does
	// that); New fills the NATS defaults again if they are unset.
	Spec config.Sink
	// Source is the name of the source the sink belongs to.
	Source string
	// Node is the node's name, for the connection name.
	Node string
	// ConnectionName is the connection's name at the server (what
	// nats-server's /connz and `nats server report connections` show).
	// Default "ankusa/<node>/<source>/<sink id>".
	ConnectionName string
	Logger         *zap.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ReconnectWait is the pause between two reconnect attempts to one
	// server (default 1 s; the client adds up to 100 ms of jitter).
	ReconnectWait time.Duration
}

// EnsureDefaults fills unset options, the spec's keys with config's sink
// defaults (config.ApplySinkDefaults).
func (o *Options) EnsureDefaults() {
	s := &o.Spec
	if s.Type == "" {
		s.Type = "nats"
	}
	config.ApplySinkDefaults(s)
	if o.ConnectionName == "" {
		o.ConnectionName = "ankusa/" + o.Node + "/" + o.Source + "/" + s.ID
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ReconnectWait <= 0 {
		o.ReconnectWait = time.Second
	}
}

// settings is what New derives from the options once they are checked.
type settings struct {
	subject  *config.Template
	subjects []string // of a stream create_stream makes
	tls      *tls.Config
}

// Validate checks the options after EnsureDefaults: config's sink rules
// (config.CheckSink, the rules the config file is held to) and what only
// this sink knows: the subject template, the stream subjects, the TLS
// files and the credentials file. Errors name the config key to fix and
// never show a password or a token.
func (o *Options) Validate() error {
	_, err := o.settings()
	return err
}

func (o *Options) settings() (*settings, error) {
	s := o.Spec
	if s.Type == "" {
		s.Type = "nats"
	}
	if s.Type != "nats" {
		return nil, fmt.Errorf("sink type %q is not nats", s.Type)
	}
	if probs := config.CheckSink(&s); len(probs) > 0 {
		return nil, errors.New(probs[0])
	}
	for _, one := range strings.Split(s.URL, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Host == "" || !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme) {
			return nil, fmt.Errorf("url: %s is not a NATS URL (nats://host:port or tls://host:port, a comma-separated list for a cluster)", redactURL(s.URL))
		}
	}
	var st settings
	var err error
	if st.subject, err = config.ParseTemplate(s.Subject); err != nil {
		return nil, fmt.Errorf("subject: %w", err)
	}
	if bad := checkSubjectTemplate(st.subject); bad != "" {
		return nil, fmt.Errorf("subject: %q %s", s.Subject, bad)
	}
	if s.CreateStream != nil {
		st.subjects = s.CreateStream.Subjects
		if len(st.subjects) == 0 {
			st.subjects = []string{wildcardSubject(st.subject)}
		}
		for i, subj := range st.subjects {
			if bad := checkSubject(subj, true); bad != "" {
				return nil, fmt.Errorf("create_stream.subjects[%d]: %q %s", i, subj, bad)
			}
		}
	}
	if a := s.Auth; a != nil {
		if a.CredsFile != "" {
			if _, err := os.Stat(a.CredsFile); err != nil {
				return nil, fmt.Errorf("auth.creds_file: %w", err)
			}
		}
	}
	if s.TLS != nil {
		if st.tls, err = s.TLS.ClientConfig(); err != nil {
			return nil, err
		}
	}
	return &st, nil
}

// checkSubjectTemplate says what is wrong with the literal text of a
// subject template ("" when nothing is): the fields are checked per hook.
func checkSubjectTemplate(t *config.Template) string {
	// Each field stands for a token's worth of text ("x"): what is left
	// must be a valid publish subject.
	var b strings.Builder
	for _, p := range t.Parts() {
		if p.Field == config.TemplateLiteral {
			b.WriteString(p.Text)
		} else {
			b.WriteString("x")
		}
	}
	return checkSubject(b.String(), false)
}

// wildcardSubject is the default subject of a stream create_stream makes:
// the subject template with each token that holds a field replaced by
// "*" ("ankusa.{tenant_id}.{source_id}" → "ankusa.*.*").
func wildcardSubject(t *config.Template) string {
	var b strings.Builder
	for _, p := range t.Parts() {
		if p.Field == config.TemplateLiteral {
			b.WriteString(p.Text)
		} else {
			b.WriteByte(0)
		}
	}
	toks := strings.Split(b.String(), ".")
	for i, tok := range toks {
		if strings.IndexByte(tok, 0) >= 0 {
			toks[i] = "*"
		}
	}
	return strings.Join(toks, ".")
}

// checkSubject says what makes subj an invalid NATS subject ("" when
// nothing does): empty, white space or control characters, an empty
// token, and — unless wildcards — a wildcard token ("*" or ">"), which a
// message may not be published to.
func checkSubject(subj string, wildcards bool) string {
	if subj == "" {
		return "is empty"
	}
	for i := 0; i < len(subj); i++ {
		if c := subj[i]; c <= ' ' || c == 0x7f {
			return "holds white space or a control character"
		}
	}
	toks := strings.Split(subj, ".")
	for i, tok := range toks {
		switch {
		case tok == "":
			return "has an empty token (a leading, trailing or doubled '.')"
		case !wildcards && (tok == "*" || tok == ">"):
			return "has a wildcard token ('*' or '>'); a message is published to a literal subject"
		case wildcards && tok == ">" && i != len(toks)-1:
			return "has '>' before its last token"
		}
	}
	return ""
}

// redactURL hides the credentials of each comma-separated URL: the
// password of user:password, and a token given as the user.
func redactURL(s string) string {
	parts := strings.Split(s, ",")
	for i, one := range parts {
		u, err := url.Parse(strings.TrimSpace(one))
		switch {
		case err != nil:
			parts[i] = "(unparsable URL)"
		case u.User == nil:
			parts[i] = u.String()
		default:
			if _, ok := u.User.Password(); ok {
				parts[i] = u.Redacted()
			} else {
				u.User = url.User("xxxxx")
				parts[i] = u.String()
			}
		}
	}
	return strings.Join(parts, ",")
}
