package filter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"

	"github.com/ankusa/ankusa/envelope"
)

const (
	// MaxLen bounds an expression's length in bytes: a filter is a line
	// of config, and the cache holds each one.
	MaxLen = 4096
	// CostLimit stops an evaluation that has spent this many CEL cost
	// units (about one per operation and per element a comprehension
	// visits). A filter runs on the dispatcher's row writer for every hook
	// of its source: with WorkLimit on reading the body, the worst filter
	// stops within tens of milliseconds on a 1 MiB body, its parse
	// included (TestBodyWorkBounded); an honest filter costs tens of
	// units.
	CostLimit = 25_000
	// interruptEvery is how many comprehension iterations pass between two
	// checks of the caller's context, so that a node stopping is not held
	// up by a filter's loop.
	interruptEvery = 100
)

// ErrFilter is the sentinel of every error Compile returns, so callers can
// tell a bad expression from their own trouble.
var ErrFilter = errors.New("filter")

// Program is a compiled, type-checked filter. It is immutable and safe
// for concurrent use.
type Program struct {
	expr string
	prg  cel.Program
	// body is set when the expression names body: only then is a hook's
	// body parsed (read from the checked expression's references).
	body bool
	// loops is set when the expression has a comprehension (all, exists,
	// map, filter): only such a program checks the caller's context while
	// it runs; every other one is bounded by its length.
	loops bool
}

// Expr is the expression the program was compiled from.
func (p *Program) Expr() string { return p.expr }

// UsesBody reports whether the expression names body, so that evaluating
// it parses a hook's body.
func (p *Program) UsesBody() bool { return p.body }

// env is the one CEL environment every filter is checked in.
var env = sync.OnceValues(func() (*cel.Env, error) {
	strMap := cel.MapType(cel.StringType, cel.StringType)
	return cel.NewEnv(
		cel.Variable("event_type", cel.StringType),
		cel.Variable("tenant_id", cel.StringType),
		cel.Variable("source_id", cel.StringType),
		cel.Variable("headers", strMap),
		cel.Variable("params", strMap),
		cel.Variable("body", cel.DynType),
		// JSON numbers are doubles: body.amount > 1000 must compare.
		cel.CrossTypeNumericComparisons(true),
		// headers[?'x-github-event'].orValue('') == 'push': a header a
		// hook may lack, without a run-time error on the hooks that do.
		cel.OptionalTypes(),
	)
})

// Compile checks expr and returns its program (or its error), from the
// cache when the same expression was compiled before. Its errors wrap ErrFilter and
// carry CEL's own message with the position ("ERROR: <input>:1:1:
// undeclared reference to 'evnt_type'"); config puts the key in front.
func Compile(expr string) (*Program, error) {
	if r, ok := programs.get(expr); ok {
		return r.p, r.err
	}
	p, err := compile(expr)
	programs.put(expr, compiled{p, err})
	return p, err
}

func compile(expr string) (*Program, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("%w: the expression is empty (leave filter out to deliver every hook)", ErrFilter)
	}
	if len(expr) > MaxLen {
		return nil, fmt.Errorf("%w: the expression is %d bytes, at most %d", ErrFilter, len(expr), MaxLen)
	}
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("BUG: filter: the CEL environment does not build: %w", err)
	}
	checked, iss := e.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("%w: %s", ErrFilter, issues(iss))
	}
	if t := checked.OutputType(); !t.IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("%w: must be a bool expression, it is %s", ErrFilter, t)
	}
	p := &Program{expr: expr}
	if err := p.inspect(checked.NativeRep()); err != nil {
		return nil, err
	}
	est, err := e.EstimateCost(checked, noSizes{})
	if err != nil {
		return nil, fmt.Errorf("%w: cannot estimate its cost: %v", ErrFilter, err)
	}
	if est.Min > CostLimit {
		return nil, fmt.Errorf("%w: costs at least %d to evaluate, past the limit of %d (a comprehension over a long list?)", ErrFilter, est.Min, CostLimit)
	}
	p.prg, err = e.Program(checked,
		cel.CostLimit(CostLimit),
		cel.InterruptCheckFrequency(interruptEvery),
		cel.EvalOptions(cel.OptOptimize), // folds constants, compiles regexes once
	)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFilter, err)
	}
	return p, nil
}

// issues is CEL's report without its source excerpts (the config names
// the key; the caret lines would break a one-line problem), one error
// after another.
func issues(iss *cel.Issues) string {
	var b strings.Builder
	for i, line := range strings.Split(iss.Err().Error(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.TrimSuffix(line, " (in container '')"))
	}
	return b.String()
}

// inspect reads what the evaluation will need from the checked
// expression, and refuses a headers key that could never match.
func (p *Program) inspect(a *ast.AST) error {
	for _, ref := range a.ReferenceMap() {
		if ref.Name == "body" {
			p.body = true
		}
	}
	var bad []string
	for _, n := range ast.MatchDescendants(ast.NavigateAST(a), ast.AllMatcher()) {
		switch n.Kind() {
		case ast.ComprehensionKind:
			p.loops = true
		case ast.CallKind:
			c := n.AsCall()
			args := c.Args()
			if len(args) != 2 {
				continue
			}
			switch c.FunctionName() {
			case operators.Index, operators.OptIndex:
				bad = appendUpperKey(bad, args[0], args[1])
			case operators.In:
				bad = appendUpperKey(bad, args[1], args[0])
			}
		case ast.SelectKind:
			s := n.AsSelect()
			if isHeaders(s.Operand()) && s.FieldName() != strings.ToLower(s.FieldName()) {
				bad = append(bad, s.FieldName())
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: headers keys are lower case: write headers['%s'], not headers['%s']", ErrFilter, strings.ToLower(bad[0]), bad[0])
	}
	return nil
}

func isHeaders(e ast.Expr) bool { return e.Kind() == ast.IdentKind && e.AsIdent() == "headers" }

// appendUpperKey adds key to bad when m is headers and key a string
// literal with an upper-case letter.
func appendUpperKey(bad []string, m, key ast.Expr) []string {
	if !isHeaders(m) || key.Kind() != ast.LiteralKind {
		return bad
	}
	if s, ok := key.AsLiteral().(types.String); ok && string(s) != strings.ToLower(string(s)) {
		bad = append(bad, string(s))
	}
	return bad
}

// noSizes lets CEL assume the worst size of every variable: the estimate's
// minimum is then what the expression costs whatever the hook, which is
// all Compile refuses on.
type noSizes struct{}

func (noSizes) EstimateSize(cost.AstNode) *cost.SizeEstimate { return nil }
func (noSizes) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// Match reports whether the hook e matches. A runtime error (a missing
// field or key, the cost limit) is (false, err).
func (p *Program) Match(e *envelope.Envelope) (bool, error) {
	h := NewHook(e)
	defer h.Release()
	return p.Eval(context.Background(), h)
}

// Eval is Match over a Hook, which several programs may share so that the
// hook's headers and body are read once (the caller releases it after the
// last); ctx stops a comprehension early (the node is stopping).
func (p *Program) Eval(ctx context.Context, h *Hook) (bool, error) {
	var (
		out any
		err error
	)
	h.work = budget{}
	if p.loops {
		v, _, e := p.prg.ContextEval(ctx, h)
		out, err = v, e
	} else {
		v, _, e := p.prg.Eval(h)
		out, err = v, e
	}
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("filter: the result is %v, not a bool", out)
	}
	return bool(b), nil
}
