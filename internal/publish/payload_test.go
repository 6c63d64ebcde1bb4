package publish_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/publish"
)

const (
	testBase  = "0123456789abcdef0123456789abcdef01234567"
	testPatch = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)

func fixOutput(payload string) *publish.Output {
	return &publish.Output{ID: "o", RepositoryID: "r", Kind: publish.KindFixPR, FixRunID: "f", Payload: []byte(payload),
		Bound: publish.Bound{PatchSHA256: testPatch, BaseSHA: testBase}}
}

func TestDecodeFixPRTarget(t *testing.T) {
	good := `{"issue":7,"baseRef":"main","baseSha":"` + testBase + `","files":2,"summary":"s"}`
	tg, _, err := publish.DecodeFixPRTarget(fixOutput(good))
	if err != nil || tg.Issue != 7 || tg.BaseRef != "main" || tg.BaseSHA != testBase || tg.PatchSHA256 != testPatch || tg.FixRunID != "f" {
		t.Fatalf("%+v %v", tg, err)
	}
	for name, payload := range map[string]string{
		"unknown field":  `{"issue":7,"baseRef":"main","baseSha":"` + testBase + `","title":"x"}`,
		"no issue":       `{"baseRef":"main","baseSha":"` + testBase + `"}`,
		"other base":     `{"issue":7,"baseRef":"main","baseSha":"` + strings.Repeat("b", 40) + `"}`,
		"ref with ..":    `{"issue":7,"baseRef":"a..b","baseSha":"` + testBase + `"}`,
		"full ref":       `{"issue":7,"baseRef":"refs/heads/main","baseSha":"` + testBase + `"}`,
		"trailing data":  good + `{}`,
		"negative files": `{"issue":7,"baseRef":"main","baseSha":"` + testBase + `","files":-1}`,
	} {
		if _, _, err := publish.DecodeFixPRTarget(fixOutput(payload)); !errors.Is(err, publish.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	o := fixOutput(good)
	o.Kind = publish.KindReview
	if _, _, err := publish.DecodeFixPRTarget(o); !errors.Is(err, publish.ErrInvalid) {
		t.Errorf("review output: %v", err)
	}
}

// FuzzDecodeFixPRTarget: any payload is decoded or refused with
// ErrInvalid, and a decoded target always carries the bound base and a
// usable branch name.
func FuzzDecodeFixPRTarget(f *testing.F) {
	f.Add(`{"issue":7,"baseRef":"main","baseSha":"` + testBase + `","files":2,"summary":"s"}`)
	f.Add(`{"issue":1e9,"baseRef":"x/y","baseSha":"` + testBase + `"}`)
	f.Fuzz(func(t *testing.T, payload string) {
		tg, _, err := publish.DecodeFixPRTarget(fixOutput(payload))
		if err != nil {
			if !errors.Is(err, publish.ErrInvalid) {
				t.Fatalf("not ErrInvalid: %v", err)
			}
			return
		}
		if tg.BaseSHA != testBase || tg.Issue <= 0 || tg.BaseRef == "" || strings.Contains(tg.BaseRef, "..") {
			t.Fatalf("decoded %+v", tg)
		}
	})
}

func TestDecodeFixCommitTarget(t *testing.T) {
	good := `{"issue":7,"baseRef":"feature","baseSha":"` + testBase + `","files":2,"summary":"s"}`
	o := fixOutput(good)
	o.Kind, o.Bound.HeadSHA = publish.KindFixCommit, testBase
	tg, _, err := publish.DecodeFixCommitTarget(o)
	if err != nil || tg.PullRequest != 7 || tg.HeadRef != "feature" || tg.ExpectedHeadSHA != testBase || tg.PatchSHA256 != testPatch {
		t.Fatalf("%+v %v", tg, err)
	}
	for name, edit := range map[string]func(o *publish.Output){
		"no bound head":    func(o *publish.Output) { o.Bound.HeadSHA = "" },
		"other bound head": func(o *publish.Output) { o.Bound.HeadSHA = strings.Repeat("c", 40) },
		"a fix_pr output":  func(o *publish.Output) { o.Kind = publish.KindFixPR },
		"unknown field": func(o *publish.Output) {
			o.Payload = []byte(`{"issue":7,"baseRef":"feature","baseSha":"` + testBase + `","force":true}`)
		},
	} {
		o := fixOutput(good)
		o.Kind, o.Bound.HeadSHA = publish.KindFixCommit, testBase
		edit(o)
		if _, _, err := publish.DecodeFixCommitTarget(o); !errors.Is(err, publish.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
