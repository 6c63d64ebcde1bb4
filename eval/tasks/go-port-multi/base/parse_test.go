package netcfg

import (
	"testing"
)

func TestParsePlain(t *testing.T) {
	if p, err := ParsePort("8080"); err != nil || p != 8080 {
		t.Fatal(p, err)
	}
}
