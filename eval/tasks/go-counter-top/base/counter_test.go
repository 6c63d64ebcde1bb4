package words

import (
	"testing"
)

func TestCount(t *testing.T) {
	var c Counter
	c.Add("a")
	c.Add("a")
	if c.Count("a") != 2 || c.Count("b") != 0 {
		t.Fatal("count")
	}
}
