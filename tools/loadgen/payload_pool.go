package main

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

// poolBody is one generated body. It is shared read-only by every worker:
// a request copies data and writes its token at data[slot:slot+tokenLen].
type poolBody struct {
	data  []byte
	slot  int
	kind  string // stripe or github
	event string // Stripe event type or X-GitHub-Event name
}

// payloadPool holds the bodies of each size class of the mix. It is
// immutable after newPayloadPool and safe for concurrent use.
type payloadPool struct {
	mix     sizeMix
	classes [][]poolBody
}

// newPayloadPool generates the bodies for kind (stripe, github or mixed)
// at every size of mix. perClass caps the bodies per class (0: default).
func newPayloadPool(kind string, mix sizeMix, perClass int, seed uint64, now time.Time) (*payloadPool, error) {
	if perClass <= 0 {
		perClass = defaultPoolPerClass
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := &payloadPool{mix: mix, classes: make([][]poolBody, len(mix))}
	for i, c := range mix {
		n := min(perClass, max(minPoolPerClass, poolBytesPerClass/c.size))
		backing := make([]byte, 0, n*c.size)
		bodies := make([]poolBody, n)
		for j := range bodies {
			b, err := generateBody(r, kind, j, c.size, now, backing[len(backing):])
			if err != nil {
				return nil, fmt.Errorf("cannot generate a %d-byte %s body: %w", c.size, kind, err)
			}
			backing = backing[:len(backing)+len(b.data)]
			bodies[j] = b
		}
		p.classes[i] = bodies
	}
	return p, nil
}

// generateBody draws one event of the kind and sizes it into dst's storage.
// mixed alternates Stripe and GitHub events by index. An event whose
// mandatory fields (long names drawn) do not fit the size is drawn again.
func generateBody(r *rand.Rand, kind string, index, size int, now time.Time, dst []byte) (poolBody, error) {
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
			return poolBody{data: data, slot: doc.slot, kind: docKind, event: event}, nil
		}
	}
	return poolBody{}, err
}

// pick draws a size class by the mix's weights, then a body of it.
func (p *payloadPool) pick(r *rand.Rand) *poolBody {
	class := p.classes[p.mix.pick(r)]
	return &class[r.IntN(len(class))]
}
