package top

import (
	"reflect"
	"testing"

	"example.com/words"
)

func TestTop(t *testing.T) {
	var c words.Counter
	for _, w := range []string{"b", "a", "c", "b", "a", "b"} {
		c.Add(w)
	}
	if got := c.Top(2); !reflect.DeepEqual(got, []string{"b", "a"}) {
		t.Fatal(got)
	}
	if got := c.Top(10); len(got) != 3 || got[2] != "c" {
		t.Fatal(got)
	}
}
