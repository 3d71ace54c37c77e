package config

import (
	"reflect"
	"strings"
)

// entities are the parts of a config that a problem of the schema walk
// quiets (see schema.go), each by its path: the top-level sections and the
// structs in a list or a map (a source, a sink, a token, a route, a
// tenant's rate limit).
type entities struct {
	in     map[string]string // entity → the entity it is in ("": none)
	hushed map[string]bool
}

func newEntities() entities {
	return entities{in: map[string]string{}, hushed: map[string]bool{}}
}

// enter records the entity at path, inside ent, and returns path.
func (e *entities) enter(path, ent string) string {
	e.in[path] = ent
	return path
}

// enterIfStruct is enter for a value of type t when t is a struct: the
// entries of a list or a map that are entities.
func (e *entities) enterIfStruct(path, ent string, t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return ent
	}
	return e.enter(path, ent)
}

// hush quiets the entity ent ("" is no entity: the top of the file).
func (e *entities) hush(ent string) {
	if ent != "" {
		e.hushed[ent] = true
	}
}

// quiet returns probs less those inside a hushed entity.
func (e *entities) quiet(probs Problems) Problems {
	if len(e.hushed) == 0 {
		return probs
	}
	var out Problems
	for _, line := range probs {
		if !e.isHushed(keyOf(line)) {
			out = append(out, line)
		}
	}
	return out
}

// isHushed reports whether key lies in a hushed entity: the innermost
// entity that key is at or inside, or any entity that one is in. (Entities
// are found by path, so a map key with a dot in it can be taken for another
// entity's field; nothing but a message is at stake.)
func (e *entities) isHushed(key string) bool {
	for k := key; k != ""; k = k[:max(0, strings.LastIndexAny(k, ".["))] {
		if _, ok := e.in[k]; !ok {
			continue
		}
		for ent := k; ent != ""; ent = e.in[ent] {
			if e.hushed[ent] {
				return true
			}
		}
		return false
	}
	return false
}
