package caps

import (
	"testing"
)

func TestTitleSimple(t *testing.T) {
	if got := Title("hello world"); got != "Hello World" {
		t.Fatal(got)
	}
}

func TestTitleLowersTheRest(t *testing.T) {
	// Every word: first letter upper case, the rest lower case.
	if got := Title("hELLO wORLD"); got != "Hello World" {
		t.Fatal(got)
	}
}
