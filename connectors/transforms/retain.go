package transforms

import "reflect"

// ownPackage is this package's import path.
var ownPackage = reflect.TypeOf(regexRouter{}).PkgPath()

// RetainsNoInput reports whether plugin, a transform or predicate, is one
// of this package's. None of them keeps anything of the records it is
// given once a call returns: what they cache is keyed by and holds
// schemas and topic names, never a value or a header read from a record.
// A runtime that reuses a record's memory once the record is done with
// relies on it (a sink recycles its fetches, ADR 0026); transforms of other
// packages are not known to. A transform added here must keep that promise
// too, or copy what it keeps, or be made an exception below.
func RetainsNoInput(plugin any) bool {
	t := reflect.TypeOf(plugin)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && t.PkgPath() == ownPackage
}
