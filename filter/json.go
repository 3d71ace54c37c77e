package filter

import (
	"fmt"
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"github.com/valyala/fastjson"
)

// The body is parsed with fastjson and read lazily: an object is a CEL
// map over the parsed value that turns into CEL values only the members
// a filter reads, so body.type costs the parse and one lookup rather than
// a copy of the whole document. Scalars are copied out when read
// (strings included), so no value a filter returns points into the
// parser's memory; a map or list does, which is why a Hook's parser is
// given back only by Release, once no filter of the hook runs any more.

// emptyBody is the body that is not JSON: has(body.x) is false.
var emptyBody = types.DefaultTypeAdapter.NativeToValue(map[string]any{})

// WorkLimit bounds what reading the body costs one evaluation, in JSON
// values touched: keys scanned by a lookup, elements read from an array,
// values copied by an equality or a conversion. CEL's cost limit counts
// operations, and one operation on the body (a lookup in an object of
// many keys, the equality of two large objects) may touch many values;
// this limit holds those to a bound as well, so no filter can hold the
// dispatcher's row writer (a few milliseconds at worst).
const WorkLimit = 1 << 20

// budget is one Hook's count of work spent in the current evaluation.
type budget struct{ n int }

// spend charges n; false when the evaluation is past WorkLimit.
func (b *budget) spend(n int) bool {
	b.n += n
	return b.n <= WorkLimit
}

func errWork() ref.Val {
	return types.NewErr("filter: reading the body went past %d values (a lookup or comparison over a large body inside a loop?)", WorkLimit)
}

// jsonAdapter turns a list's elements into CEL values as they are read,
// charging each to the budget.
type jsonAdapter struct{ b *budget }

func (a jsonAdapter) NativeToValue(v any) ref.Val {
	if x, ok := v.(*fastjson.Value); ok {
		if !a.b.spend(1) {
			return errWork()
		}
		return jsonValue(x, a.b)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// jsonValue is v as a CEL value: objects and arrays lazily (an element is
// converted when read), numbers as doubles (google.protobuf.Value's
// reading of JSON).
func jsonValue(v *fastjson.Value, b *budget) ref.Val {
	switch v.Type() {
	case fastjson.TypeObject:
		return jsonObject{v, b}
	case fastjson.TypeArray:
		a, _ := v.Array() // the parser's own slice: no copy
		return types.NewDynamicList(jsonAdapter{b}, a)
	case fastjson.TypeString:
		return types.String(v.GetStringBytes())
	case fastjson.TypeNumber:
		return types.Double(v.GetFloat64())
	case fastjson.TypeTrue:
		return types.True
	case fastjson.TypeFalse:
		return types.False
	}
	return types.NullValue
}

// jsonObject is a JSON object as a CEL map(string, dyn). Lookups read
// the parsed object; what CEL does with a map as a whole (equality,
// conversion) goes through a copy (eager), charged like the rest.
type jsonObject struct {
	v *fastjson.Value
	b *budget
}

var _ traits.Mapper = jsonObject{}

func (o jsonObject) obj() *fastjson.Object {
	x, _ := o.v.Object()
	return x
}

// eager copies the object into a CEL map of Go values, or is an error
// past the budget.
func (o jsonObject) eager() ref.Val {
	n, ok := native(o.v, o.b)
	if !ok {
		return errWork()
	}
	return types.DefaultTypeAdapter.NativeToValue(n)
}

func (o jsonObject) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	x := o.obj()
	// Get scans the keys one by one.
	if !o.b.spend(1 + x.Len()) {
		return errWork(), true
	}
	v := x.Get(string(k))
	if v == nil {
		return nil, false
	}
	return jsonValue(v, o.b), true
}

func (o jsonObject) Get(key ref.Val) ref.Val {
	v, found := o.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

func (o jsonObject) Contains(key ref.Val) ref.Val {
	v, found := o.Find(key)
	if types.IsError(v) {
		return v
	}
	return types.Bool(found)
}

func (o jsonObject) Size() ref.Val { return types.Int(o.obj().Len()) }

// Iterator visits the keys, copied out once (charged).
func (o jsonObject) Iterator() traits.Iterator {
	x := o.obj()
	if !o.b.spend(x.Len()) {
		return &keyIter{err: errWork()}
	}
	keys := make([]string, 0, x.Len())
	x.Visit(func(k []byte, _ *fastjson.Value) { keys = append(keys, string(k)) })
	return &keyIter{keys: keys}
}

func (o jsonObject) ConvertToNative(t reflect.Type) (any, error) {
	e := o.eager()
	if types.IsError(e) {
		return nil, e.(*types.Err)
	}
	return e.ConvertToNative(t)
}

func (o jsonObject) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return o
	case types.TypeType:
		return types.MapType
	}
	e := o.eager()
	if types.IsError(e) {
		return e
	}
	return e.ConvertToType(t)
}

func (o jsonObject) Equal(other ref.Val) ref.Val {
	e := o.eager()
	if types.IsError(e) {
		return e
	}
	return e.Equal(other)
}

func (o jsonObject) Type() ref.Type { return types.MapType }

func (o jsonObject) Value() any {
	n, _ := native(o.v, o.b)
	return n
}

// keyIter iterates an object's keys (or is the error that stopped it).
type keyIter struct {
	keys []string
	i    int
	err  ref.Val
}

func (it *keyIter) HasNext() ref.Val {
	if it.err != nil {
		return it.err
	}
	return types.Bool(it.i < len(it.keys))
}

func (it *keyIter) Next() ref.Val {
	if it.err != nil {
		return it.err
	}
	k := it.keys[it.i]
	it.i++
	return types.String(k)
}

func (it *keyIter) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("filter: an iterator has no native form")
}
func (it *keyIter) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("filter: an iterator has no type conversion")
}
func (it *keyIter) Equal(ref.Val) ref.Val { return types.False }
func (it *keyIter) Type() ref.Type        { return types.IteratorType }
func (it *keyIter) Value() any            { return nil }
