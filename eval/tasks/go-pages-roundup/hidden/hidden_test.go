package paging

import (
	"testing"
)

func TestPagesPartial(t *testing.T) {
	if got := Pages(21, 10); got != 3 {
		t.Fatal(got)
	}
	if got := Pages(1, 10); got != 1 {
		t.Fatal(got)
	}
}

func TestPagesZero(t *testing.T) {
	if Pages(0, 10) != 0 || Pages(5, 0) != 0 {
		t.Fatal("zero")
	}
}
