// Package patch is the fix agent's edit surface and the rules every fix
// patch must pass before it is stored, approved and published (spec §4
// "Patch source", §6, §7.5, threats FX3–FX6). The fix agent and the
// publisher call it and add no rules of their own.
//
// # Flow
//
//	ov, _ := patch.NewOverlay(base, policy, limits)  // base: OpenDir(checkout) or a Listing
//	ov.EditFile(p, old, new); ov.CreateFile(p, s); ov.DeleteFile(p)  // the agent's tools
//	changes := ov.Changes()                          // []FixFileChange, path order
//	diff, _ := patch.RenderDiff(changes, base)       // what the maintainer approves
//	sum := patch.PatchSHA256(changes)                // fix_runs.patch_sha256
//	err := patch.ValidatePatch(changes, fresh, policy, limits, scanner)
//	hot := patch.ExecutedPaths(changes)              // highlighted in the approval preview
//
// The worker validates against the base it checked out; the publisher
// validates again against a fresh listing of the base commit (Listing from
// the code host's tree and blobs at baseSha) and refuses unless
// PatchSHA256(changes) equals the approved hash. A *RejectedError lists
// every Violation, each naming the path (empty for patch-wide limits), a
// stable Rule code and a message that never quotes file content.
//
// # Paths
//
// PathViolation is the one path check. NormalizePath documents the
// canonical form: `\` is a separator, leading `/`, `.` and empty segments
// go, `..` is resolved (escaping the root is invalid), NFC; control,
// format (bidi, zero-width) and separator characters, segments ending in a
// space or a dot, and segments with ':' are invalid rather than
// normalised away, because Windows and macOS would write them as a
// different name. Matching is on the Unicode case-folded NFC form. Patches
// must carry canonical paths; the edit tools accept any spelling and
// store the canonical one.
//
// The built-in denied set is spec §6, grouped by Rule (denied.git,
// denied.git_hooks, denied.github, denied.codeowners, denied.ci,
// denied.agent_instructions, denied.package_manager, denied.secret_file,
// lockfile); policy cannot lift it. Two entries go beyond the spec's list:
// .gitattributes in any directory and the NTFS short name git~1. Then
// PathPolicy.DeniedPaths (policy.denied), PathPolicy.AllowedPaths
// (policy.not_allowed when set and none matches) and lockfiles unless
// PathPolicy.AllowLockfiles.
//
// # Glob syntax
//
// Patterns (built-in and policy) are matched against the whole normalised
// path, case-insensitively, anchored at the repository root:
//
//   - `/` separates segments; `\` counts as `/`; leading `/` and `./` are
//     ignored; `..` is an error;
//   - `**` as a whole segment matches zero or more segments (`**/AGENTS.md`
//     is AGENTS.md in any directory, `.github/**` is everything beneath);
//   - `*` matches any run of characters within one segment, `?` exactly one
//     character; every other character is literal (no classes, no braces,
//     no escapes);
//   - a pattern that matches a directory matches everything beneath it
//     (`docs` covers `docs/a.md`, as does `docs/**`).
//
// # Overlay
//
// Overlay keeps edits in memory over a Base that it only reads (DirBase
// reads a checkout through os.Root and never writes; Listing reads blobs
// through a BlobReader and checks each against its blob SHA). EditFile
// needs oldText to occur exactly once (overlapping occurrences count) and
// otherwise returns *MatchCountError with the count. Edit-time checks:
// the path rules, 100644 regular files only (no symlinks, gitlinks,
// executables), UTF-8 without NUL, MaxFileBytes, no new bidi/zero-width
// character, MaxFiles and MaxChangedLines. An edit that breaks a rule
// changes nothing. A file edited back to its base content is no longer a
// change.
//
// # Patch
//
// A FixFileChange carries the whole new content and git's blob id of the
// base content (BlobSHA, as `git hash-object`). RenderDiff writes the git
// `diff --full-index` format; `git apply` accepts it (tested against the
// git binary, including missing final newlines, CRLF, empty files and
// deletions). PatchSHA256 hashes the length-prefixed canonical form its
// doc comment defines.
//
// # Content rules
//
// Changed lines are the added plus removed lines of a line diff (Myers),
// counted over all files. Bidi controls (U+061C, U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069) and zero-width characters (U+180E,
// U+200B–U+200D, U+2060–U+2064, U+FEFF) are refused in added lines; the
// one exception is U+FEFF as the first character of a file (a UTF-8 byte
// order mark). Removed lines are not checked: removing such a character is
// fine. The secret scan (SecretScanner, in production *leaks.Scanner:
// gitleaks' default rules used as a library plus secret.Find's patterns)
// runs over the added lines of each file; any hit rejects.
//
// # Tree shape
//
// A created path must not exist at the base, must not lie beneath a file,
// symlink or gitlink, must not be where the base has a directory, and it
// and its directories must not equal an existing path when case and
// Unicode form are ignored (README.md vs readme.md, café in NFD vs NFC).
// The same holds between the changes of one patch. A patch that deletes
// README.md and creates readme.md is refused too: rename by case is not
// worth the risk.
//
// # Executed paths
//
// ExecutedPaths marks changes to files that builds, tests or CI execute
// (package.json, Makefiles, Dockerfiles, scripts, Python and JVM build
// files, test files and directories, tool configs, go.mod, files with
// //go:generate, …) with the reason, so the approval preview can
// highlight them. It never blocks anything.
package patch
