package web

import (
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/patch"
)

func TestSplitRowsPairsChanges(t *testing.T) {
	diff := "diff --git a/x.txt b/x.txt\n--- a/x.txt\n+++ b/x.txt\n@@ -1,5 +1,5 @@\n keep\n-old1\n-old2\n+new1\n same\n+added<b>\n-gone\n"
	files, _, _ := renderDiff(diff, nil, false)
	if len(files) != 1 {
		t.Fatalf("files: %d", len(files))
	}
	got := strings.Split(strings.TrimSpace(string(files[0].Split)), "\n")
	want := []string{
		`<tr class="hunk"><td colspan="4">@@ -1,5 +1,5 @@</td></tr>`,
		`<tr class="ctx"><td class="ln ctx">1</td><td class="code ctx">keep</td><td class="ln ctx">1</td><td class="code ctx">keep</td></tr>`,
		`<tr class="chg"><td class="ln del">2</td><td class="code del">old1</td><td class="ln add">2</td><td class="code add">new1</td></tr>`,
		`<tr class="chg"><td class="ln del">3</td><td class="code del">old2</td><td class="ln empty"></td><td class="code empty"></td></tr>`,
		`<tr class="ctx"><td class="ln ctx">4</td><td class="code ctx">same</td><td class="ln ctx">3</td><td class="code ctx">same</td></tr>`,
		// An addition not after a deletion stands alone; the deletion after it too.
		`<tr class="chg"><td class="ln empty"></td><td class="code empty"></td><td class="ln add">4</td><td class="code add">added&lt;b&gt;</td></tr>`,
		`<tr class="chg"><td class="ln del">5</td><td class="code del">gone</td><td class="ln empty"></td><td class="code empty"></td></tr>`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("split rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDiffView(t *testing.T) {
	for in, want := range map[string]string{"": viewUnified, "split": viewSplit, "plain": viewPlain, "unified": viewUnified,
		"<script>": viewUnified, "SPLIT": viewUnified} {
		if got := diffView(in); got != want {
			t.Errorf("diffView(%q) = %q, want %q", in, got, want)
		}
	}
}

// The side-by-side rows escape what the unified ones do.
func FuzzSplitRows(f *testing.F) {
	base := patch.MapBase(map[string]patch.MapFile{"a.go": {Content: "package a\n"}})
	d, _ := patch.RenderDiff([]patch.FixFileChange{{Path: "a.go", Operation: patch.OpModify, BaseBlobSHA: patch.BlobSHA([]byte("package a\n")),
		NewContent: "package a // <b>\n", Mode: patch.ModeFile}}, base)
	f.Add(d)
	f.Add("diff --git a/x b/x\n+++ b/\"<img>\"\n@@ -1 +1 @@\n-<script>\n+</td><tr>\n")
	f.Add("diff --git a/x b/x\n+++ b/x.go\n@@ -1 +1 @@\n+a\n+b\n-c\n \n\\ No newline\n")
	f.Fuzz(func(t *testing.T, diff string) {
		files, _, _ := renderDiff(diff, nil, false)
		for _, fl := range files {
			rows := strings.NewReplacer(`<tr class="`, "", `<td class="`, "", `<td colspan="4">`, "", `</td>`, "", `</tr>`, "",
				`<span class="`, "", `">`, "", `</span>`, "").Replace(string(fl.Split))
			if strings.ContainsAny(rows, "<>") {
				t.Fatalf("unescaped markup in split rows: %q", fl.Split)
			}
			if strings.Count(string(fl.Split), "<tr") != strings.Count(string(fl.Split), "</tr>") {
				t.Fatalf("unbalanced rows: %q", fl.Split)
			}
		}
	})
}
