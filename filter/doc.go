// Package filter compiles and evaluates sink filters (sinks[].filter,
// DESIGN.md §2.7): a CEL expression over one hook that says whether the
// sink gets a delivery row for it.
//
// The variables a filter sees:
//
//	event_type  string               the provider's event type ("" when the source has none)
//	tenant_id   string               the hook's tenant
//	source_id   string               the hook's source
//	headers     map(string, string)  the request's header fields
//	params      map(string, string)  the route's parameters
//	body        dyn                  the body parsed as JSON
//
// headers: keys are the field names in lower case, whatever case the
// sender used ("x-github-event"), and a name repeated in the request
// has its values joined by ", " in the order received, as HTTP allows
// (RFC 9110 §5.3). A CEL map lookup is exact, so headers['X-GitHub-Event']
// would never find a key: Compile refuses a headers key written as a
// literal that is not lower case, and says which spelling to use.
// A lookup of a key the hook does not carry is a runtime error: for a
// header some hooks lack, write headers[?"x-foo"].orValue("") == "bar"
// (optional types are on) or "x-foo" in headers && headers["x-foo"] == "bar".
//
// body: a JSON object is a map, arrays are lists, numbers are doubles
// (as in google.protobuf.Value), and numbers compare with ints across
// types (body.data.object.amount > 1000 works). A body that is not JSON,
// or is empty, is an empty map: has(body.x) is false and body.x is a
// runtime error. It is parsed at most once per hook, when a filter first
// reads it (a filter that does not name body never does:
// Program.UsesBody, from the checked expression's references), and read
// lazily: only the members a filter looks at become CEL values (json.go).
//
// Bounds: an expression is at most MaxLen bytes; its evaluation stops
// with an error past CostLimit (CEL's cost units, about one per
// operation and per element a comprehension visits), and a filter whose
// least possible cost is already past it is refused at compile time.
// A runtime error (a missing field, a missing key, the cost limit) makes
// Match answer false with the error: the caller counts it and treats the
// hook as not matching.
//
// Compile caches programs by expression (sources are rebuilt on every
// admin write; their filters rarely change), so the hot path finds a
// filter compiled at validation. A Program is safe for concurrent use; a
// Hook is not.
package filter
