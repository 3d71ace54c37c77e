// Package payload generates the provider-like webhook bodies tools/loadgen
// sends, and signs them as the providers do. It is importable so that every
// program that needs realistic hooks (loadgen, the benchmarks under bench/)
// uses the one generator and the one signer.
//
// A Pool holds bodies per size class of a SizeMix (Stripe-like events,
// GitHub-like events, or both alternately), each exactly its class's size:
// varied event types, ids, timestamps, nested objects, and a list that
// grows with the size. Each body has a slot of TokenLen characters inside
// a JSON string (the Stripe event id, the GitHub node_id) that a sender
// overwrites with a token unique to its request, so that no two requests
// carry the same body. A Signer adds the signature headers of a provider's
// scheme at send time.
//
// It imports no package of this module: the product never depends on it,
// and it never depends on the product (its tests check the signatures with
// the product's verifiers).
package payload

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Pool bounds: up to defaultPoolPerClass bodies per size class and about
// poolBytesPerClass bytes of them, but at least minPoolPerClass.
const (
	defaultPoolPerClass = 4096
	poolBytesPerClass   = 16 << 20
	minPoolPerClass     = 4
)

// Kinds are the payload shapes NewPool generates: Stripe-like events,
// GitHub-like events, or both alternately.
var Kinds = []string{"stripe", "github", "mixed"}

// Body is one generated body. It belongs to its Pool and is shared
// read-only by every sender: a request copies Data and writes its token at
// Data[Slot:Slot+TokenLen] of the copy.
type Body struct {
	Data  []byte
	Slot  int
	Kind  string // stripe or github
	Event string // Stripe event type or X-GitHub-Event name
}

// Pool holds the bodies of each size class of the mix. It is
// immutable after NewPool and safe for concurrent use.
type Pool struct {
	mix     SizeMix
	classes [][]Body
}

// NewPool generates the bodies for kind (one of Kinds) at every size of
// mix, from seed, with timestamps in the 30 days before now. perClass caps
// the bodies per class (0: up to 4096 and about 16 MiB of them).
func NewPool(kind string, mix SizeMix, perClass int, seed uint64, now time.Time) (*Pool, error) {
	if perClass <= 0 {
		perClass = defaultPoolPerClass
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := &Pool{mix: mix, classes: make([][]Body, len(mix))}
	for i, c := range mix {
		n := min(perClass, max(minPoolPerClass, poolBytesPerClass/c.Size))
		backing := make([]byte, 0, n*c.Size)
		bodies := make([]Body, n)
		for j := range bodies {
			b, err := generateBody(r, kind, j, c.Size, now, backing[len(backing):])
			if err != nil {
				return nil, fmt.Errorf("cannot generate a %d-byte %s body: %w", c.Size, kind, err)
			}
			backing = backing[:len(backing)+len(b.Data)]
			bodies[j] = b
		}
		p.classes[i] = bodies
	}
	return p, nil
}

// generateBody draws one event of the kind and sizes it into dst's storage.
// mixed alternates Stripe and GitHub events by index. An event whose
// mandatory fields (long names drawn) do not fit the size is drawn again.
func generateBody(r *rand.Rand, kind string, index, size int, now time.Time, dst []byte) (Body, error) {
	docKind := kind
	if kind == "mixed" {
		docKind = [2]string{"stripe", "github"}[index%2]
	}
	var err error
	for range 100 {
		var (
			doc   *sizedDoc
			event string
			data  []byte
		)
		if docKind == "stripe" {
			doc, event = stripeDoc(r, now)
		} else {
			doc, event = githubDoc(r, now)
		}
		if data, err = doc.appendTo(dst, size); err == nil {
			if len(data) != size {
				panic(fmt.Sprintf("BUG: generated %d bytes for a %d-byte body", len(data), size))
			}
			return Body{Data: data, Slot: doc.slot, Kind: docKind, Event: event}, nil
		}
	}
	return Body{}, err
}

// Pick draws a size class by the mix's weights, then a body of it.
func (p *Pool) Pick(r *rand.Rand) *Body {
	class := p.classes[p.mix.pick(r)]
	return &class[r.IntN(len(class))]
}
