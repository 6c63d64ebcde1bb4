// Package sanitise turns untrusted text (model output, scanner messages,
// issue text) into GitHub Markdown that is safe to publish in one repository
// (spec RP2/RP8/RP9, FX9, SC2, AC1). It is the only way such text reaches a
// body the publisher posts; the renderers in internal/publish/render add
// Quavon's own markup around it.
//
// # How it works
//
// The input is parsed by goldmark, a CommonMark-compliant parser, with the
// GitHub extensions GitHub itself enables (tables, strikethrough, task
// lists, bare-URL autolinks). The output is written by Quavon from that
// tree, never by editing the input: only the node kinds below survive, and
// every literal character of text is escaped, so text can never become
// markup, HTML or a GitHub extension on GitHub's side.
//
//	paragraphs, ATX headings, thematic breaks, block quotes, lists
//	(task boxes included), GFM tables: rewritten, content sanitised
//	emphasis, strong, strikethrough, code spans: kept
//	fenced and indented code: a fenced block that cannot be ended early
//	links, autolinks: kept only under https://<host>/<owner>/<repo>/
//	images: removed, the alt text stays as text
//	raw HTML, HTML blocks, comments, link reference definitions: removed
//
// Then the text is neutralised: what GitHub would act on goes into a code
// span, which keeps it visible and makes it inert (see below): @mentions
// and team mentions in every spelling (＠ and ﹫ included, and across
// emphasis or removed HTML), cross-repository references (owner/repo#12;
// owner/repo@sha has its @), closing keywords followed by a reference, bare
// URLs outside the repository, and slash, bang and bors commands at the
// start of a line. Bidi controls, zero-width and other invisible characters
// are removed everywhere, code included. The result is capped in bytes at a
// block boundary (a cut code block is closed again) and ends with CutNotice.
//
// Inspect is the independent check: it parses Markdown again and lists
// every mention, foreign link, image, HTML, closing or cross-repository
// reference, command and invisible character GitHub would see. The
// sanitiser runs it on its own output and publishes RemovedNotice instead if
// anything is found (fuzzing keeps that path unused); the renderers' tests
// run it on whole bodies.
//
// Input that goldmark parses in quadratic time is bounded first: at most
// four times the output budget is parsed, lines longer than 1 KiB are
// broken, and a line opening more than 32 containers makes the whole input
// plain text.
//
// # What GitHub does, and where it says so
//
//   - Mentions. "You can mention a person or team on GitHub by typing @ plus
//     their username or team name. This will trigger a notification"
//     (GitHub Docs, Basic writing and formatting syntax, "Mentioning people
//     and teams"; teams as @org/team). GitHub finds mentions in the text
//     nodes of the rendered HTML and skips text inside pre, code and a
//     elements: html-pipeline's MentionFilter, the open-source ancestor of
//     GitHub's (IGNORE_PARENTS = pre code a style script). Hence code spans,
//     and hence no backslash escapes: "\@user" renders as "@user" before
//     that filter runs. Mentions in link text are neutralised too, as a link
//     that is dropped leaves its text behind.
//   - Autolinked references (GitHub Docs, Autolinked references and URLs):
//     URLs; #26, GH-26, owner/repo#26 and issue URLs; commit SHAs,
//     user@SHA and owner/repo@SHA and commit URLs. Same-repository forms
//     (#26, GH-26, a SHA) stay; the others are neutralised or are links
//     judged by the repository prefix.
//   - Closing keywords (GitHub Docs, Linking a pull request to an issue):
//     close, closes, closed, fix, fixes, fixed, resolve, resolves, resolved,
//     any case, as "KEYWORD #N" or "KEYWORD OWNER/REPOSITORY#N", in a pull
//     request's description or a commit message; "Duplicate of #N" marks a
//     duplicate in a comment (Using keywords in issues and pull requests).
//     The sanitiser also takes the -ing forms and a colon ("Fixes: #1"),
//     and treats a keyword followed by anything but a plain word as one,
//     end of block included. Only the renderer writes a closing line.
//     Keywords inside code are not read by GitHub (observed, and reported
//     by others; the docs are silent): the renderers rely on that only
//     for command output, which must be shown as it is.
//   - Hidden content: "placing the content in an HTML comment" hides it
//     (Basic writing and formatting syntax, "Hiding content with
//     comments"); model text never gets that power, which also keeps the
//     renderer's idempotency markers unforgeable by it.
//   - Code: a closing fence must be at least as long as the opening one
//     (CommonMark 0.31, fenced code blocks); a code span ends at a backtick
//     string of exactly its opening length (code spans). GFM splits table
//     cells at '|' even inside code spans unless it is escaped as "\|".
//     GitHub's special fenced blocks (suggestion, mermaid, geojson,
//     topojson, stl, math) are refused as languages.
//   - Limits: GitHub refuses issue, pull request and comment bodies over
//     65 536 characters ("body is too long (maximum is 65536 characters)")
//     and check run summaries over 65 535 (REST: Create a check run). Caps
//     here are in bytes, which is never fewer than characters.
package sanitise
