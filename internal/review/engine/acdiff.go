package engine

import (
	"context"
	"strings"

	"github.com/quavon/quavon/internal/scan"
)

// DiffText is the change of plan as the reviewer is shown it (changed
// lines marked +, a few lines around them, numbered as at head), file by
// file in the plan's order, at most maxBytes: files that do not fit whole
// are named in a closing line, so a judge can tell it saw a part.
func DiffText(ctx context.Context, plan *scan.Plan, maxBytes int) string {
	var b strings.Builder
	var left []string
	for _, f := range plan.Files {
		ranges, ok := plan.Changed[f]
		if !ok {
			continue
		}
		data, ok := plan.ReadFile(ctx, f)
		if !ok {
			left = append(left, f)
			continue
		}
		d := fileDiff(f, data, ranges)
		if b.Len()+len(d) > maxBytes {
			left = append(left, f)
			continue
		}
		b.WriteString(d)
	}
	if len(left) > 0 {
		b.WriteString("=== not shown (too large or unreadable): " + strings.Join(left, ", ") + "\n")
	}
	return b.String()
}
