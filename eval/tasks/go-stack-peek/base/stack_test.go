package stack

import "testing"

func TestPushPop(t *testing.T) {
	var s Stack
	s.Push(1)
	s.Push(2)
	if v, ok := s.Pop(); !ok || v != 2 {
		t.Fatalf("Pop = %d, %v", v, ok)
	}
}
