// Package mention finds bot commands in comment Markdown: "@<app-slug>
// <command>", as in "@quavon-fixer fix" or "@quavon review". It is the one
// parser of such commands; the fix trigger and the review trigger both use
// it.
//
// A command is recognised where GitHub itself would see a mention of the
// app, and nowhere else:
//
//   - The comment is parsed as GitHub Flavored Markdown by goldmark. Text in
//     code spans, fenced and indented code blocks, block quotes, HTML
//     blocks, raw inline HTML, links, autolinks and images is not read
//     (GitHub's mention filter skips pre, code and a elements; a quoted
//     command is someone else's words).
//   - Text is read as rendered: backslash escapes and entity references are
//     resolved first, so "\@bot fix" is a command, as it is a mention on
//     GitHub.
//   - The mention is an ASCII "@" at the start of the text or after a
//     character that cannot be part of a user name or an e-mail address,
//     followed by the slug compared without regard to case, and not
//     followed by a slug character or "/" (a team mention).
//   - The command is the word right after the mention, separated from it by
//     spaces or tabs on the same line; it is lower-cased. A word is ASCII
//     letters, digits and "-". "@bot please fix" is the command "please".
//   - Args is the rest of that line, trimmed and capped at MaxArgsBytes.
//
// Hostile input is bounded: a comment longer than MaxInputBytes, with a line
// longer than MaxLineBytes, or with a line that opens more than MaxNesting
// containers (goldmark takes time quadratic in a line's length and in that
// depth) is refused with an error wrapping ErrTooLarge, ErrLineTooLong or
// ErrTooDeep before it is parsed; at most MaxCommands commands are
// returned. A comment that does not contain the slug at all is not parsed.
package mention
