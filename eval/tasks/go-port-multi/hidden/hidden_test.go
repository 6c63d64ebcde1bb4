package netcfg

import (
	"testing"
)

func TestParseMax(t *testing.T) {
	if p, err := ParsePort("65535"); err != nil || p != 65535 {
		t.Fatal(p, err)
	}
}

func TestParseSpaces(t *testing.T) {
	if p, err := ParsePort(" 8080 "); err != nil || p != 8080 {
		t.Fatal(p, err)
	}
}

func TestParseBad(t *testing.T) {
	for _, s := range []string{"0", "65536", "x", ""} {
		if _, err := ParsePort(s); err == nil {
			t.Fatal(s)
		}
	}
}
