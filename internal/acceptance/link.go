package acceptance

import (
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
)

// Linked-issue caps.
const (
	// MaxLinkedIssues bounds the issues one pull request links. GitHub
	// itself lets a pull request be linked to at most ten issues by hand;
	// more than that is noise or abuse, and every issue costs a judge's
	// attention (AC3).
	MaxLinkedIssues = 10
	// MaxPRBodyBytes is the prefix of a pull request body that is read.
	// GitHub caps a body at 65 536 characters, at most 4 bytes each.
	MaxPRBodyBytes = 1 << 18
	// maxIssueDigits bounds an issue number's digits (GitHub's are int32).
	maxIssueDigits = 9
)

// Repo names the repository of a pull request: the base repository, the
// only one whose issues the check may read (AC2).
type Repo struct {
	// ID is GitHub's repository id (databaseId). Zero means unknown.
	ID int64
	// Owner and Name as GitHub spells them now; compared
	// case-insensitively, as GitHub compares them.
	Owner, Name string
	// Host is the web host of the code host, "github.com" or a GitHub
	// Enterprise Server host. Empty: full issue URLs are never recognised.
	Host string
}

func (r Repo) sameName(owner, name string) bool {
	return r.Owner != "" && r.Name != "" &&
		strings.EqualFold(r.Owner, owner) && strings.EqualFold(r.Name, name)
}

// ClosingReference is one node of GraphQL
// pullRequest.closingIssuesReferences: the issue's number and its
// repository.
type ClosingReference struct {
	RepositoryID int64 // repository.databaseId; zero if not asked for
	Owner, Name  string
	Number       int
}

// SameRepositoryClosing returns, in order and without repeats, the
// numbers of refs that are issues of repo. When both sides carry a
// repository id the id decides (a rename cannot confuse it); otherwise
// owner and name must both match. References to any other repository are
// dropped (AC2).
func SameRepositoryClosing(refs []ClosingReference, repo Repo) []int {
	var out []int
	for _, r := range refs {
		if !validNumber(r.Number) {
			continue
		}
		same := false
		if r.RepositoryID != 0 && repo.ID != 0 {
			same = r.RepositoryID == repo.ID
		} else {
			same = repo.sameName(r.Owner, r.Name)
		}
		if same {
			out = appendNew(out, r.Number)
		}
	}
	return out
}

// BranchIssue returns the issue number a head branch names, by the
// convention GitHub's "Create a branch" uses: the branch's last segment
// starts with the number and a dash, "123-fix-login" or
// "feature/123-fix-login" ("refs/heads/" is ignored). Numbers with a
// leading zero, and a segment that is only "123-", name nothing.
//
// For a pull request from a fork the number is still read as an issue of
// the base repository: issue text only ever comes from there.
func BranchIssue(branch string) (int, bool) {
	branch = strings.TrimPrefix(branch, "refs/heads/")
	if i := strings.LastIndexByte(branch, '/'); i >= 0 {
		branch = branch[i+1:]
	}
	digits, rest, ok := strings.Cut(branch, "-")
	if !ok || rest == "" {
		return 0, false
	}
	n, ok := parseNumber(digits)
	return n, ok
}

// ClosingKeywordIssues returns, in order of appearance and without
// repeats, the issues of repo that body links with GitHub's closing
// keywords.
//
// The keywords are GitHub's nine: close, closes, closed, fix, fixes,
// fixed, resolve, resolves, resolved, in any letter case and optionally
// followed by a colon ("Closes #10", "CLOSES #10", "Closes: #10"), then
// white space and one reference; one keyword links one issue ("Resolves
// #10, resolves #123"). Source: GitHub Docs, "Linking a pull request to an
// issue" (docs.github.com/en/issues/tracking-your-work-with-issues/
// using-issues/linking-a-pull-request-to-an-issue). A keyword is a whole
// word: "prefixes #10" links nothing.
//
// The references accepted are the same-repository forms only:
//
//   - "#N";
//   - "GH-N" (any case): GitHub's autolinks define it as the same
//     repository's issue N ("Autolinked references and URLs"), so it can
//     name nothing else;
//   - "https://<repo.Host>/<owner>/<name>/issues/N", optionally with a
//     "#fragment", where host, owner and name are repo's (compared
//     case-insensitively): the URL names the repository completely, so it
//     is the same reference as "#N". Pull-request URLs, other hosts,
//     http:, query strings and any other path are not links.
//
// "owner/repo#N" is ignored whatever it names, even repo itself: the
// spec admits keywords without an owner/repo prefix only, and a
// same-repository link written that way still arrives through
// closingIssuesReferences, which SameRepositoryClosing filters by id.
//
// The body is read as CommonMark (the first MaxPRBodyBytes, up to a line
// nested absurdly deep: boundNesting). Text in code spans, code blocks,
// HTML comments and other raw HTML, or struck through, links nothing: it
// is not what a reader sees as a link.
func ClosingKeywordIssues(body string, repo Repo) []int {
	if len(body) > MaxPRBodyBytes {
		body = body[:MaxPRBodyBytes]
	}
	src, _ := boundNesting([]byte(strings.ToValidUTF8(body, "\uFFFD")))
	doc := newMarkdown().Parser().Parse(textReader(src))
	var out []int
	var pt plainText
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c.Kind() {
			case ast.KindFencedCodeBlock, ast.KindCodeBlock, ast.KindHTMLBlock:
				continue
			}
			if c.Type() == ast.TypeBlock && c.FirstChild() != nil && c.FirstChild().Type() == ast.TypeInline {
				out = scanKeywords(pt.inlineText(c, src, textOptions{urls: true}), repo, out)
				continue
			}
			walk(c)
		}
	}
	walk(doc)
	return out
}

// closingKeywords are GitHub's, lower case.
var closingKeywords = []string{"close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved"}

func scanKeywords(text string, repo Repo, out []int) []int {
	for i := 0; i < len(text); {
		kw := keywordAt(text, i)
		if kw == 0 {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		j := i + kw
		if j < len(text) && text[j] == ':' {
			j++
		}
		ws := j
		for j < len(text) && isSpace(text[j]) {
			j++
		}
		if j == ws {
			i += kw
			continue
		}
		if n, ok := parseReference(text[j:], repo); ok {
			out = appendNew(out, n)
		}
		i = j
	}
	return out
}

// keywordAt returns the length of the closing keyword that starts at i of
// text as a whole word, or 0. Letter case is folded for ASCII only, so no
// other script's look-alike letters make a keyword.
func keywordAt(text string, i int) int {
	if i > 0 {
		r, _ := utf8.DecodeLastRuneInString(text[:i])
		if isWordRune(r) {
			return 0
		}
	}
	best := 0
	for _, k := range closingKeywords {
		if asciiHasPrefixFold(text[i:], k) && len(k) > best {
			end := i + len(k)
			if end < len(text) {
				r, _ := utf8.DecodeRuneInString(text[end:])
				if isWordRune(r) {
					continue
				}
			}
			best = len(k)
		}
	}
	return best
}

// parseReference reads the one reference at the start of s.
func parseReference(s string, repo Repo) (int, bool) {
	switch {
	case strings.HasPrefix(s, "#"):
		return numberThenBoundary(s[1:])
	case asciiHasPrefixFold(s, "gh-"):
		return numberThenBoundary(s[3:])
	case asciiHasPrefixFold(s, "https://"):
		return issueURL(s, repo)
	}
	return 0, false
}

// numberThenBoundary reads an issue number that is not followed by a
// letter, digit or underscore, nor by "/" or "-" ("#12-3" names nothing).
func numberThenBoundary(s string) (int, bool) {
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end < len(s) {
		r, _ := utf8.DecodeRuneInString(s[end:])
		if isWordRune(r) || r == '/' || r == '-' {
			return 0, false
		}
	}
	return parseNumber(s[:end])
}

// issueURL reads a full issue URL of repo at the start of s.
func issueURL(s string, repo Repo) (int, bool) {
	if repo.Host == "" {
		return 0, false
	}
	end := 0
	for end < len(s) {
		r, size := utf8.DecodeRuneInString(s[end:])
		if unicode.IsSpace(r) || strings.ContainsRune(`<>()[]{}"'`+"`", r) {
			break
		}
		end += size
	}
	raw := strings.TrimRight(s[:end], ".,;:!?")
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil || u.RawQuery != "" || u.ForceQuery ||
		u.Port() != "" || !strings.EqualFold(u.Hostname(), repo.Host) || u.RawPath != "" {
		return 0, false
	}
	parts := strings.Split(u.Path, "/")
	if len(parts) != 5 || parts[0] != "" || parts[3] != "issues" || !repo.sameName(parts[1], parts[2]) {
		return 0, false
	}
	return parseNumber(parts[4])
}

// parseNumber accepts 1 to maxIssueDigits decimal digits without a
// leading zero.
func parseNumber(s string) (int, bool) {
	if s == "" || len(s) > maxIssueDigits || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && validNumber(n)
}

// asciiHasPrefixFold reports whether s starts with the lower-case ASCII
// prefix, ignoring ASCII letter case only.
func asciiHasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

func validNumber(n int) bool { return n > 0 && n < 1_000_000_000 }

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

func appendNew(s []int, n int) []int {
	for _, x := range s {
		if x == n {
			return s
		}
	}
	return append(s, n)
}

// LinkSource says how a pull request links an issue.
type LinkSource string

// Link sources, in the order Resolve ranks them.
const (
	// LinkClosingReference: GitHub's closingIssuesReferences (keywords it
	// parsed, and issues linked by hand in the sidebar).
	LinkClosingReference LinkSource = "closing_reference"
	// LinkKeyword: a closing keyword in the body (ClosingKeywordIssues).
	LinkKeyword LinkSource = "keyword"
	// LinkBranch: the head branch's name (BranchIssue).
	LinkBranch LinkSource = "branch"
)

// PullRequest is what Resolve reads of a pull request.
type PullRequest struct {
	Body       string
	HeadBranch string
	// Closing is closingIssuesReferences as GitHub answered it, unfiltered.
	Closing []ClosingReference
}

// Link is one issue of the repository a pull request links.
type Link struct {
	Number  int
	Sources []LinkSource // in the order of the LinkSource constants
}

// Links is what Resolve found.
type Links struct {
	Issues []Link
	// Dropped counts issues past MaxLinkedIssues.
	Dropped int
}

// Numbers returns the linked issue numbers in order.
func (l Links) Numbers() []int {
	out := make([]int, 0, len(l.Issues))
	for _, i := range l.Issues {
		out = append(out, i.Number)
	}
	return out
}

// Resolve returns the issues of repo that pr links: GitHub's closing
// references filtered to repo first, then closing keywords in the body,
// then the branch name; each issue once, with every source that named it,
// at most MaxLinkedIssues. Nothing here says the issue exists or may be
// read: that is Admit's.
func Resolve(pr PullRequest, repo Repo) Links {
	var out Links
	index := map[int]int{}
	add := func(n int, src LinkSource) {
		if i, ok := index[n]; ok {
			if i < 0 {
				return // over the cap, counted once
			}
			if !contains(out.Issues[i].Sources, src) {
				out.Issues[i].Sources = append(out.Issues[i].Sources, src)
			}
			return
		}
		if len(out.Issues) >= MaxLinkedIssues {
			index[n] = -1
			out.Dropped++
			return
		}
		index[n] = len(out.Issues)
		out.Issues = append(out.Issues, Link{Number: n, Sources: []LinkSource{src}})
	}
	for _, n := range SameRepositoryClosing(pr.Closing, repo) {
		add(n, LinkClosingReference)
	}
	for _, n := range ClosingKeywordIssues(pr.Body, repo) {
		add(n, LinkKeyword)
	}
	if n, ok := BranchIssue(pr.HeadBranch); ok {
		add(n, LinkBranch)
	}
	return out
}

func contains(s []LinkSource, x LinkSource) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
