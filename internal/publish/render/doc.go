// Package render writes every text the publisher posts to GitHub, from
// typed fields (spec FX9, FX17, §7 items 7–8, SC2, AC1): pull request
// bodies of issue fixes and stacked review fixes, commit messages, review
// summaries, inline comments and check run summaries.
//
// Quavon's own words and markup come from this package; text from the model,
// the scanners, the issue or the repository (plans, titles, finding bodies,
// criteria, tool errors) enters only through internal/publish/sanitise, and
// paths, commands, logins and rule ids only as code spans. Command output
// is shown only inside code blocks whose fence nothing in it can close, cut
// to its end. So the only closing keyword a body can hold is the one line
// "Fixes #<issue>" that FixPullRequest writes; a stacked review fix writes
// "Fixes review findings of #<pr>" instead and no closing keyword at all.
// The only HTML is the hidden marker of the publish intent (Marker.Comment)
// and, in a comment, the finding's fingerprint, neither of which model text
// can produce, since the sanitiser removes every HTML comment.
//
// The inputs are plain structs with no database or GitHub client types: the
// publisher fills them from its tables and passes the results to the
// writer. Every renderer validates its input and refuses (with an error)
// what it cannot show faithfully; every body is capped below GitHub's
// limits by construction, each list with a "…and N more" line.
//
// Spec FX17 writes the commit reference line as "CodeLotse reference
// <marker>"; the product is Quavon, so the line is Product + " reference "
// + marker (Marker.CommitLine), and CommitHasMarker is what reconcile uses.
package render
