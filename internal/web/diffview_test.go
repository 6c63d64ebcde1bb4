package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/web/webtest"
)

// The approval page's side-by-side view (?view=split): the same files,
// executed-path highlight and escaping as the unified view, chosen by a
// plain link; an unknown view is the unified one.
func TestApprovalSideBySide(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	changes, base := webtest.FixPatch(3, 4, "fixed")
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	changes = append(changes, patch.FixFileChange{Path: `docs/<img src=x onerror=alert(3)>.md`, Operation: patch.OpCreate,
		NewContent: evil + "\n", Mode: patch.ModeFile})
	fr := f.NewFixRun(t, 31, changes, base, time.Now().Add(time.Hour))

	unified := body(t, mustGet(t, c, f.URL+"/fixes/"+fr.ID))
	if !strings.Contains(unified, `href="?view=split"`) || strings.Contains(unified, `class="diff split"`) {
		t.Fatal("the unified page lacks the side-by-side link or shows the split table")
	}
	split := body(t, mustGet(t, c, f.URL+"/fixes/"+fr.ID+"?view=split"))
	if n := strings.Count(split, `<table class="diff split">`); n != len(changes) {
		t.Fatalf("split tables: %d, want %d", n, len(changes))
	}
	if strings.Contains(split, `<table class="diff">`) {
		t.Error("the split page also shows unified tables")
	}
	if n := strings.Count(split, `class="file exec"`); n != 1 || !strings.Contains(split, "Executed by build or test systems") {
		t.Errorf("executed-path highlights in the split view: %d, want 1 (the Makefile)", n)
	}
	// A changed line sits beside its replacement: old on the left, new on the right.
	if !strings.Contains(split, `<td class="code del">`) || !strings.Contains(split, `<td class="code add">`) ||
		!strings.Contains(split, `<tr class="chg"><td class="ln del">3</td>`) {
		t.Error("no paired change row in the split view")
	}
	for _, bad := range []string{"<script>", "<img src=x"} {
		if strings.Contains(split, bad) {
			t.Errorf("the split view contains %q unescaped", bad)
		}
	}
	if !strings.Contains(split, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the untrusted line is not shown escaped")
	}
	if !strings.Contains(split, `<strong aria-current="page">Side by side</strong>`) || !strings.Contains(split, `href="?view=unified"`) {
		t.Error("the split page does not mark its view or link back to unified")
	}
	// The decision form binds the same hashes whatever the view.
	if decisionForm(t, split).Get("patch_sha256") != fr.PatchSHA {
		t.Error("the split page's decision form is not bound to the patch")
	}
	odd := body(t, mustGet(t, c, f.URL+"/fixes/"+fr.ID+"?view=%3Cscript%3E"))
	if !strings.Contains(odd, `<strong aria-current="page">Unified</strong>`) || strings.Contains(odd, "<script>") {
		t.Error("an unknown view is not the unified one")
	}
}
