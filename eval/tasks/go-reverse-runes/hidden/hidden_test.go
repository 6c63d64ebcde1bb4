package text

import (
	"testing"
)

func TestReverseUnicode(t *testing.T) {
	if got := Reverse("héllo, 世界"); got != "界世 ,olléh" {
		t.Fatal(got)
	}
}

func TestReverseEmpty(t *testing.T) {
	if got := Reverse(""); got != "" {
		t.Fatal(got)
	}
}
