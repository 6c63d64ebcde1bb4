package publisher

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/github/writer"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/sast"
)

// operation is one output's write and its reconcile read, prepared from
// the payload before anything is sent.
type operation struct {
	write func(ctx context.Context, w *writer.Reviewer) (string, error)
	find  func(ctx context.Context, w *writer.Reviewer) (string, bool, error)
	// shown are the findings a review shows (marked posted on success).
	shown []string
}

// Conclusion is a check run's conclusion: success when the run has no
// new findings and nothing was incomplete, neutral otherwise. There is no
// other value: the check never fails (the acceptance check included).
func Conclusion(rv render.Review) string {
	if len(rv.Inline) > 0 || len(rv.Outside) > 0 || rv.ModelFailed != "" {
		return ConclusionNeutral
	}
	if rv.SAST != nil {
		if rv.SAST.Failed != "" || len(rv.SAST.NotScanned) > 0 || rv.SAST.NotScannedDropped > 0 {
			return ConclusionNeutral
		}
		for _, t := range rv.SAST.Tools {
			if t.Incomplete || (t.Status != sast.StatusOK && t.Status != sast.StatusNoFiles) {
				return ConclusionNeutral
			}
		}
	}
	return ConclusionSuccess
}

// The only conclusions a check run of Quavon's can have.
const (
	ConclusionSuccess = "success"
	ConclusionNeutral = "neutral"
)

func (p *Publisher) operation(ctx context.Context, tx pgx.Tx, f facts) (operation, error) {
	rend, err := render.New(render.Repo{Host: f.repo.host, Owner: f.repo.owner, Name: f.repo.name})
	if err != nil {
		return operation{}, err
	}
	marker := render.Marker(f.intent.Marker)
	bot := writer.BotLogin(p.cfg.ReviewAppSlug)
	switch f.out.Kind {
	case publish.KindReview:
		pl, err := review.DecodePayload(f.out.Payload)
		if err != nil {
			return operation{}, err
		}
		rv := pl.Render(marker)
		body, err := rend.ReviewBody(rv)
		if err != nil {
			return operation{}, err
		}
		shown, err := shownFindings(ctx, tx, f.out.ReviewRunID, pl.Shows())
		if err != nil {
			return operation{}, err
		}
		comments := make([]writer.ReviewComment, 0, len(rv.Inline))
		for i, fd := range rv.Inline {
			c, err := rend.Comment(fd)
			if err != nil {
				return operation{}, fmt.Errorf("inline finding %d: %w", i, err)
			}
			line := fd.Line
			if fd.EndLine > line {
				line = fd.EndLine
			}
			if fd.Path == "" || line <= 0 {
				return operation{}, fmt.Errorf("inline finding %d has no line", i)
			}
			comments = append(comments, writer.ReviewComment{Path: fd.Path, Line: line, Side: "RIGHT", Body: c})
		}
		return operation{
			shown: shown,
			write: func(ctx context.Context, w *writer.Reviewer) (string, error) {
				id, err := w.CreateReview(ctx, pl.PR, rv.HeadSHA, body, comments)
				return itoa(id), err
			},
			find: func(ctx context.Context, w *writer.Reviewer) (string, bool, error) {
				rs, err := w.Reviews(ctx, pl.PR)
				if err != nil {
					return "", false, err
				}
				for _, r := range rs {
					if writer.SameLogin(r.Author, bot) && render.BodyHasMarker(r.Body, marker) {
						return itoa(r.ID), true, nil
					}
				}
				return "", false, nil
			},
		}, nil
	case publish.KindCheckRun:
		pl, err := review.DecodePayload(f.out.Payload)
		if err != nil {
			return operation{}, err
		}
		rv := pl.Render(marker)
		out, err := rend.CheckRun(rv)
		if err != nil {
			return operation{}, err
		}
		run := writer.CheckRun{Name: CheckRunName, HeadSHA: rv.HeadSHA, ExternalID: string(marker), Status: "completed",
			Conclusion: Conclusion(rv), Title: out.Title, Summary: out.Summary}
		return operation{
			write: func(ctx context.Context, w *writer.Reviewer) (string, error) {
				id, err := w.CreateCheckRun(ctx, run)
				return itoa(id), err
			},
			find: func(ctx context.Context, w *writer.Reviewer) (string, bool, error) {
				runs, err := w.CheckRuns(ctx, rv.HeadSHA)
				if err != nil {
					return "", false, err
				}
				for _, r := range runs {
					if r.ExternalID == string(marker) && strings.EqualFold(r.AppSlug, p.cfg.ReviewAppSlug) {
						return itoa(r.ID), true, nil
					}
				}
				return "", false, nil
			},
		}, nil
	case publish.KindSARIF:
		return p.sarifOperation(ctx, tx, f, marker)
	}
	return operation{}, fmt.Errorf("kind %q is not a review output", f.out.Kind)
}

// shownFindings are the ids of the run's stored findings with the given
// fingerprints: the findings a published review showed.
func shownFindings(ctx context.Context, tx pgx.Tx, runID string, fingerprints []string) ([]string, error) {
	if runID == "" || len(fingerprints) == 0 {
		return nil, nil
	}
	fs, err := review.Findings(ctx, tx, runID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, f := range fs {
		if slices.Contains(fingerprints, f.Fingerprint) {
			ids = append(ids, f.ID)
		}
	}
	return ids, nil
}
