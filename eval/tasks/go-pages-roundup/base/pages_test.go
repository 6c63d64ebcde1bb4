package paging

import (
	"testing"
)

func TestPagesExact(t *testing.T) {
	if got := Pages(20, 10); got != 2 {
		t.Fatal(got)
	}
}
