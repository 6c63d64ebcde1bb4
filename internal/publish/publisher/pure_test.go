package publisher_test

import (
	"testing"
	"time"

	"github.com/quavon/quavon/internal/publish/publisher"
	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/sast"
)

func TestConclusionNeverFails(t *testing.T) {
	t.Parallel()
	finding := render.Finding{Severity: sast.SeverityCritical, Title: "x", Sources: []render.Source{{Kind: render.SourceModel}}}
	for _, tc := range []struct {
		name string
		rv   render.Review
		want string
	}{
		{"nothing found", render.Review{}, publisher.ConclusionSuccess},
		{"all scanners ok", render.Review{SAST: &render.SAST{Tools: []render.ToolRun{{Tool: "gosec", Status: sast.StatusOK}, {Tool: "ruff", Status: sast.StatusNoFiles}}}}, publisher.ConclusionSuccess},
		{"a critical finding", render.Review{Inline: []render.Finding{finding}}, publisher.ConclusionNeutral},
		{"a finding outside the diff", render.Review{Outside: []render.Finding{finding}}, publisher.ConclusionNeutral},
		{"every criterion unmet", render.Review{AC: &render.AC{Issue: 3, Items: []render.Criterion{{Text: "x", Status: render.ACUnmet}}}}, publisher.ConclusionSuccess},
		{"model failed", render.Review{ModelFailed: "budget exceeded"}, publisher.ConclusionNeutral},
		{"scanner failed", render.Review{SAST: &render.SAST{Tools: []render.ToolRun{{Tool: "gosec", Status: sast.StatusFailed}}}}, publisher.ConclusionNeutral},
		{"scanner job failed", render.Review{SAST: &render.SAST{Failed: "sandbox down"}}, publisher.ConclusionNeutral},
		{"scanner partial", render.Review{SAST: &render.SAST{Tools: []render.ToolRun{{Tool: "gosec", Status: sast.StatusOK, Incomplete: true}}}}, publisher.ConclusionNeutral},
	} {
		if got := publisher.Conclusion(tc.rv); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestSpacer(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	s := publisher.NewSpacer(time.Second, func() time.Time { return now })
	if w := s.Reserve(1); w != 0 {
		t.Fatalf("first write waits %v", w)
	}
	if w := s.Reserve(1); w != time.Second {
		t.Fatalf("second write of the installation within the interval: wait %v", w)
	}
	if w := s.Reserve(2); w != 0 {
		t.Fatalf("another installation waits %v", w)
	}
	now = now.Add(400 * time.Millisecond)
	if w := s.Reserve(1); w != 600*time.Millisecond {
		t.Fatalf("wait %v", w)
	}
	now = now.Add(600 * time.Millisecond)
	if w := s.Reserve(1); w != 0 {
		t.Fatalf("after the interval: wait %v", w)
	}
	if w := publisher.NewSpacer(0, nil).Reserve(1); w != 0 {
		t.Fatal("no spacing waits")
	}
}
