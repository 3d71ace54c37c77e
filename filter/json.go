package filter

import (
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

// jsonValue is v as a CEL value: objects lazily, arrays as lists of
// lazily read elements, numbers as doubles (google.protobuf.Value's
// reading of JSON).
func jsonValue(v *fastjson.Value) ref.Val {
	switch v.Type() {
	case fastjson.TypeObject:
		return jsonObject{v}
	case fastjson.TypeArray:
		a, _ := v.Array()
		elems := make([]ref.Val, len(a))
		for i, x := range a {
			elems[i] = jsonValue(x)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, elems)
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
// conversion, iteration) goes through a copy (eager), which filters
// rarely need.
type jsonObject struct{ v *fastjson.Value }

var _ traits.Mapper = jsonObject{}

func (o jsonObject) obj() *fastjson.Object {
	x, _ := o.v.Object()
	return x
}

// eager copies the object into a CEL map of Go values.
func (o jsonObject) eager() traits.Mapper {
	return types.DefaultTypeAdapter.NativeToValue(native(o.v)).(traits.Mapper)
}

func (o jsonObject) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	x := o.obj().Get(string(k))
	if x == nil {
		return nil, false
	}
	return jsonValue(x), true
}

func (o jsonObject) Get(key ref.Val) ref.Val {
	v, found := o.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

func (o jsonObject) Contains(key ref.Val) ref.Val {
	_, found := o.Find(key)
	return types.Bool(found)
}

func (o jsonObject) Size() ref.Val { return types.Int(o.obj().Len()) }

func (o jsonObject) Iterator() traits.Iterator { return o.eager().Iterator() }

func (o jsonObject) ConvertToNative(t reflect.Type) (any, error) { return o.eager().ConvertToNative(t) }

func (o jsonObject) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return o
	case types.TypeType:
		return types.MapType
	}
	return o.eager().ConvertToType(t)
}

func (o jsonObject) Equal(other ref.Val) ref.Val { return o.eager().Equal(other) }

func (o jsonObject) Type() ref.Type { return types.MapType }

func (o jsonObject) Value() any { return native(o.v) }
