package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestWebAdmins(t *testing.T) {
	t.Parallel()
	c, err := LoadAPI([]string{"QUAVON_WEB_ADMINS= github.com/583231:octocat, ghe.example.com/7 "})
	if err != nil {
		t.Fatal(err)
	}
	want := []WebAdmin{{Host: "github.com", ID: 583231, Login: "octocat"}, {Host: "ghe.example.com", ID: 7}}
	if !reflect.DeepEqual(c.Web.Admins, want) {
		t.Fatalf("admins %+v, want %+v", c.Web.Admins, want)
	}
	if c, err := LoadAPI(nil); err != nil || len(c.Web.Admins) != 0 {
		t.Fatalf("default: %v %+v", err, c.Web.Admins)
	}
	for _, bad := range []string{"octocat", "github.com/octocat", "github.com/0", "github.com/-3", "GitHub.com/1", "/1", "github.com/1:a b",
		"github.com/1,github.com/1:dup", "github.com/01", "github.com/1/2"} {
		if _, err := LoadAPI([]string{"QUAVON_WEB_ADMINS=" + bad}); err == nil || !strings.Contains(err.Error(), "QUAVON_WEB_ADMINS") {
			t.Errorf("QUAVON_WEB_ADMINS=%q: %v", bad, err)
		}
	}
}
