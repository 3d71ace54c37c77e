package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// strictJSON decodes one JSON object into v: an unknown field, a value of
// the wrong type, an empty body and anything after the object are errors
// naming what is wrong.
func strictJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("body: a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Errorf("%s: %s is not a %s", te.Field, te.Value, te.Type)
	case errors.As(err, &se):
		return fmt.Errorf("body: not JSON at byte %d: %v", se.Offset, se)
	case err != nil && strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("%s: unknown field", strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
	case err != nil:
		return fmt.Errorf("body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("body: one JSON object, and nothing after it")
	}
	return nil
}
