package peek

import (
	"testing"

	"example.com/stack"
)

func TestPeek(t *testing.T) {
	var s stack.Stack
	if _, ok := s.Peek(); ok {
		t.Fatal("Peek on empty")
	}
	s.Push(7)
	if v, ok := s.Peek(); !ok || v != 7 || s.Len() != 1 {
		t.Fatalf("Peek = %d, %v, Len %d", v, ok, s.Len())
	}
}
