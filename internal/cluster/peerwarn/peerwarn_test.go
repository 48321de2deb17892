package peerwarn

import (
	"strconv"
	"testing"
	"time"
)

func TestOneWarningPerPeerAndPeriod(t *testing.T) {
	l := New(100 * time.Millisecond)
	if !l.Allow("a") || l.Allow("a") {
		t.Fatal("a: want the first warning through and the second held back")
	}
	if !l.Allow("b") {
		t.Fatal("b is held back by a's period")
	}
	time.Sleep(150 * time.Millisecond)
	if !l.Allow("a") {
		t.Fatal("a is still held back after its period")
	}
}

// Past maxPeers, the record starts over rather than grow.
func TestForgetsPeersPastTheBound(t *testing.T) {
	l := New(time.Hour)
	for i := 0; i < maxPeers; i++ {
		l.Allow(strconv.Itoa(i))
	}
	l.Allow("one more")
	if len(l.last) != 1 {
		t.Fatalf("%d peers remembered, want 1 after starting over", len(l.last))
	}
}
