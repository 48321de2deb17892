package strbox

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
)

// A value made by Of is a string like any other: it type-switches,
// compares, prints and reflects as one, equal to the conversion's, and it
// keeps its text through collections while its slab is otherwise dropped.
func TestOfIsTheConversionsValue(t *testing.T) {
	var got []any
	var want []string
	for i := range 2000 {
		if i%100 == 0 {
			runtime.GC()
		}
		slab := make([]string, 1, 8)
		slab[0] = fmt.Sprintf("value-%d", i)
		got = append(got, Of(&slab[0]))
		want = append(want, fmt.Sprintf("value-%d", i))
	}
	runtime.GC()
	for i, v := range got {
		s, ok := v.(string)
		if !ok || s != want[i] || v != any(want[i]) || fmt.Sprint(v) != want[i] {
			t.Fatalf("value %d is %#v (%T), want %q", i, v, v, want[i])
		}
		if rv := reflect.ValueOf(v); rv.Kind() != reflect.String || rv.String() != want[i] {
			t.Fatalf("value %d reflects as %v %q", i, rv.Kind(), rv.String())
		}
	}
	empty := ""
	if v := Of(&empty); v != any("") {
		t.Fatalf("Of(\"\") = %#v", v)
	}
	// A map keyed by interface values finds a boxed key by its text.
	key := "k"
	m := map[any]int{"k": 1}
	if m[Of(&key)] != 1 {
		t.Fatal("a boxed string does not hash as the conversion's")
	}
}

// Of allocates nothing.
func TestOfAllocatesNothing(t *testing.T) {
	s := "text"
	var sink any
	if n := testing.AllocsPerRun(100, func() { sink = Of(&s) }); n != 0 {
		t.Fatalf("Of allocates %v times", n)
	}
	_ = sink
}
