package payload

import (
	"errors"
	"fmt"
)

// TokenLen is the length of the per-request token each body carries in a
// fixed slot (Body.Slot).
const TokenLen = 16

// PutBase62 writes v into dst as fixed-width base62, most significant
// first: a token's characters, which need no escaping in the JSON string
// that holds its slot.
func PutBase62(dst []byte, v uint64) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = base62[v%62]
		v /= 62
	}
}

// sizedDoc is one generated event before it is sized: a mandatory head and
// tail, optional members, an optional list, and a filler string member that
// takes whatever room is left, so the document comes out at an exact length
// and stays valid JSON.
//
// head ends inside the object that receives the members (after at least one
// member of it, so every member starts with a comma); tail closes it and
// everything around it. slot is the offset in head of the TokenLen bytes
// that each request overwrites.
type sizedDoc struct {
	head, tail []byte
	slot       int
	members    [][]byte // each `,"key":value`, added in order while they fit
	listOpen   string   // e.g. `,"labels":[`; "" for no list
	listClose  string   // e.g. `]`
	item       func(dst []byte, i int) []byte
	padKey     string // key of the filler string member
	filler     func(dst []byte, n int) []byte
}

// errTooSmall: the mandatory fields of the drawn event exceed the size.
var errTooSmall = errors.New("size below the mandatory fields of the event")

// appendTo appends the document at exactly size bytes to dst and returns
// the extended buffer.
func (d *sizedDoc) appendTo(dst []byte, size int) ([]byte, error) {
	padOverhead := len(`,"`) + len(d.padKey) + len(`":""`)
	budget := size - len(d.head) - len(d.tail) - padOverhead
	if budget < 0 {
		return dst, fmt.Errorf("%w: need %d bytes, have %d", errTooSmall, size-budget, size)
	}
	dst = append(dst, d.head...)
	for _, m := range d.members {
		if len(m) <= budget {
			dst = append(dst, m...)
			budget -= len(m)
		}
	}
	dst, budget = d.appendList(dst, budget)
	dst = append(dst, `,"`...)
	dst = append(dst, d.padKey...)
	dst = append(dst, `":"`...)
	dst = d.filler(dst, budget)
	dst = append(dst, '"')
	return append(dst, d.tail...), nil
}

// appendList appends as many list items as fit in budget (or no list at all
// when not even one does) and returns the budget left.
func (d *sizedDoc) appendList(dst []byte, budget int) ([]byte, int) {
	if d.listOpen == "" {
		return dst, budget
	}
	start := len(dst)
	dst = append(dst, d.listOpen...)
	for i := 0; ; i++ {
		mark := len(dst)
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = d.item(dst, i)
		if len(dst)-start+len(d.listClose) > budget {
			dst = dst[:mark]
			if i == 0 {
				return dst[:start], budget
			}
			break
		}
	}
	dst = append(dst, d.listClose...)
	return dst, budget - (len(dst) - start)
}
