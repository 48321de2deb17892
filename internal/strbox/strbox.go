// Package strbox makes a string an interface value without the allocation
// Go's conversion makes for it (ADR 0024).
//
// An interface value holding a string points at a string header (pointer
// and length). Converting a string to an interface allocates that header,
// 16 bytes, once per value; on a record path that is once per record. Of
// builds the same interface value pointing at a header the caller keeps
// in a slab of many, so a slab's headers cost one allocation.
package strbox

import "unsafe"

// Of returns the interface value holding *p, whose data word is p itself:
// the value the conversion any(*p) makes, with its header at p instead of
// in an allocation of its own. Writing *p changes the string the value
// holds, which no interface value of Go's own can do: *p may be written
// again only once nothing reads the value any more (a source task that
// lends its records writes over them at its next Poll, when the runtime is
// done with them: connectors.RecordLender, ADR 0030), and whatever keeps a
// value past that must keep the string instead (the runtime's header memo
// does). The value keeps alive whatever holds *p: a slab of headers stays
// in memory while any of its values is referenced.
func Of(p *string) any {
	v := any("")
	(*eface)(unsafe.Pointer(&v)).data = unsafe.Pointer(p)
	return v
}

// eface is the runtime's layout of an empty interface: its type, then a
// pointer to the value (for a string, always a pointer to its header). It
// has been this since Go 1; the package's tests fail if it changes.
type eface struct {
	typ, data unsafe.Pointer
}
