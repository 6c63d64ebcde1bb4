package clamp

import "testing"

func TestClampAbove(t *testing.T) {
	if got := Clamp(15, 0, 10); got != 10 {
		t.Fatalf("Clamp(15, 0, 10) = %d", got)
	}
}

func TestClampBelow(t *testing.T) {
	if got := Clamp(-3, 0, 10); got != 0 {
		t.Fatalf("Clamp(-3, 0, 10) = %d", got)
	}
}
