package converters

import (
	"bytes"
	"fmt"
	"testing"
)

// The arena's strings are copies: they keep their text when the bytes
// they were read from change, and when the arena fills chunk after chunk.
func TestArenaStringsAreCopies(t *testing.T) {
	var a Arena
	src := []byte{}
	var got []string
	var want []string
	for i := range 5000 {
		// Sizes up to past the point where a value gets its own
		// allocation, so that chunks fill unevenly.
		v := fmt.Sprintf("%d-%s", i, bytes.Repeat([]byte{'v'}, i%(arenaChunk/6)))
		src = append(src[:0], v...)
		got = append(got, a.String(src))
		want = append(want, v)
		for j := range src {
			src[j] = 'X'
		}
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("string %d is %.40q, want %.40q", i, got[i], want[i])
		}
	}
	if s := a.String(nil); s != "" {
		t.Fatalf("String(nil) = %q", s)
	}
}

// ToConnectArena returns what ToConnect does.
func TestStringConverterToConnectArena(t *testing.T) {
	var a Arena
	c := &StringConverter{}
	for _, data := range [][]byte{nil, {}, []byte("text"), []byte("ünï\xff")} {
		ws, wv, werr := c.ToConnect("t", data)
		gs, gv, gerr := c.ToConnectArena("t", data, &a)
		if gs != ws || gv != wv || (gerr == nil) != (werr == nil) {
			t.Errorf("ToConnectArena(%q) = %v, %#v, %v; ToConnect gives %v, %#v, %v", data, gs, gv, gerr, ws, wv, werr)
		}
	}
}
