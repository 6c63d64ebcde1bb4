package caps

import (
	"testing"
)

func TestTitleHiddenSimple(t *testing.T) {
	if got := Title("go is fun"); got != "Go Is Fun" {
		t.Fatal(got)
	}
}

func TestTitleHiddenLower(t *testing.T) {
	if got := Title("sHOUTING tExT"); got != "Shouting Text" {
		t.Fatal(got)
	}
}
