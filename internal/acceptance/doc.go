// Package acceptance is the deterministic core of the acceptance-criteria
// (AC) check (spec scope row "Acceptance criteria", AC1–AC3): which issues
// a pull request links, which of them may be read, what their criteria
// are, and whether a judge's verdicts stand on the diff. Everything here
// is a pure function over typed input; the package imports no database,
// GitHub client or model SDK. The model call, the worker wiring, storage
// in ac_checks and rendering live elsewhere.
//
// # Linked issues (AC2)
//
// Resolve unions three same-repository sources, in this order, each issue
// once and at most MaxLinkedIssues:
//
//  1. GraphQL closingIssuesReferences, filtered to the repository by id
//     (by owner and name only when an id is missing): SameRepositoryClosing.
//  2. GitHub's closing keywords in the body followed by "#N", "GH-N" or
//     the full issue URL of the same repository; "owner/repo#N" is always
//     ignored: ClosingKeywordIssues documents the grammar and its source.
//  3. The head branch "123-slug" or "…/123-slug": BranchIssue.
//
// Admit then decides per issue from its row in the issues table: same
// repository only, not transferred away, not a pull request, and an
// audience that includes the pull request's (a public pull request never
// gets a private issue's text).
//
// # Criteria (AC1, AC3)
//
// Extract reads the issue body as CommonMark (goldmark, with GitHub's task
// lists, tables and strikethrough) and takes, in document order:
//
//   - task-list items ("- [ ]", "- [x]") anywhere; nested plain items add
//     their text to the item's;
//   - in a criteria section, every list item (an item with nested items
//     and no box is context for them), or, when the section has no list
//     and no Gherkin, each paragraph. A section is opened by a heading of
//     any level (ATX or setext) named "Acceptance criteria", "Definition
//     of Done" or a close variant (criteriaHeadings; case, punctuation,
//     emoji, numbering and a trailing "(…)" ignored) and runs to the next
//     heading of the same or a higher level; a paragraph standing in for a
//     heading ("**Acceptance criteria**", "Acceptance criteria:") opens a
//     section holding only the lists and Gherkin right after it;
//   - Gherkin scenarios, parsed with cucumber's parser, from fenced blocks
//     tagged gherkin, cucumber or feature, and from plain paragraphs that
//     start with a structure keyword (Feature:, Scenario:, …) or are
//     Given…Then steps: one criterion per scenario, background steps
//     included.
//
// Other code blocks (fenced or indented), HTML blocks and comments, inline
// HTML, struck-through text, tables and block quotes (quoted replies) are
// never criteria, so a "criteria section" forged inside a fence or a
// comment gives nothing. Text inside a criterion is plain text; it stays
// untrusted. Caps (Limits) bound the body read (a line nesting block
// quotes or lists absurdly deep also ends it: goldmark's cost grows with
// the square of the nesting), the number of criteria and the bytes of each
// and of all; what is cut or dropped is counted in the Extraction. Each criterion has a stable id and its Source; Inferred
// marks criteria a model extracted, which the caller asks for only when
// Extract found none.
//
// # Evidence (AC1)
//
// DecodeAnswer decodes the judge's JSON strictly (AnswerSchema; unknown,
// case-folded or repeated fields, extra data, bad statuses or ranges
// refuse the whole answer). Verify keeps the judge's status only when every cited location
// is a changed file of the pull request or lies on its changed lines
// (± ContextLines, touching one); otherwise the criterion is unclear, and
// met needs at least one verified location. A criterion about tests
// (AboutTests) may also cite test files at head the pull request does not
// change (Diff.TestFiles, IsTestPath). Reasons are cut and stripped of
// control and format characters; sanitising them for publication is the
// publisher's. Nothing here can fail a check: the worst verdict is
// unclear.
package acceptance
