// Package writer holds the code-host write methods. Only the publisher may
// link it (spec FX7, FX8; ARCHITECTURE "Boundaries"): the worker and the API
// read through github.Reader. Its tokens are write sets, which the token
// broker grants the publisher's credential only.
//
// Two types, one per app, with separate constructors: *Fixer (the Fixer
// app, github.SetFixer) and *Reviewer (the review app, github.SetReviewWrite
// and github.SetCodeScanning). Neither has the other's methods and neither
// converts into the other.
//
// What the methods allow, and nothing more:
//   - git data: blobs, trees on a base tree (regular files 100644/100755 and
//     deletions only), commits with exactly one parent (no merges);
//   - refs: create a bot branch quavon/fix-<issue>-<8 hex> (never an
//     existing ref, never force) and fast-forward a bot branch (force is not
//     expressible). No other branch is written through the REST API;
//   - pull requests: draft only, head = a bot branch of the same repository,
//     no reviewers, assignees, labels, ready-for-review or merge;
//   - the single write to a human branch is CommitOnBranch (GraphQL
//     createCommitOnBranch), which requires expectedHeadOid so GitHub applies
//     it only as a fast-forward of exactly that head (FX13);
//   - the review app: conversation comments, COMMENT reviews (never approve
//     or request changes), check runs, SARIF uploads.
//
// A write whose response is lost (timeout, 5xx) is never retried: it may
// have happened. The caller reconciles with the read methods (BranchHead,
// Commit, PullRequestsByHead) before deciding to write again.
package writer

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	gh "github.com/google/go-github/v75/github"
	"github.com/shurcooL/githubv4"

	"github.com/quavon/quavon/internal/github"
)

// Caps.
const (
	// MaxSARIFBytes is GitHub's limit for the gzip-compressed SARIF upload
	// (10 MB); larger uploads are refused before anything is sent.
	MaxSARIFBytes = 10 << 20
	// MaxRulePages bounds the pages of GET rules/branches/{branch}.
	MaxRulePages = 10
)

var (
	botBranch = regexp.MustCompile(`^quavon/fix-[1-9][0-9]{0,9}-[0-9a-f]{8}$`)
	sha1Hex   = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// ErrNotBotBranch: a ref write was asked for a branch outside
// quavon/fix-<issue>-<8 hex>.
var ErrNotBotBranch = errors.New("writer: not a Quavon bot branch")

// IsBotBranch reports whether name is a Quavon bot branch name.
func IsBotBranch(name string) bool { return botBranch.MatchString(name) }

// TreeChange is one path of a new tree: a regular file pointing at a blob,
// or, with SHA empty, the deletion of that path from the base tree.
type TreeChange struct {
	Path string
	// Mode is "100644" or "100755"; ignored for deletions.
	Mode string
	// SHA is the blob SHA; "" (with Content nil) deletes Path.
	SHA string
	// Content, when not nil, is the file's text sent inline in the tree
	// entry (GitHub stores the blob itself: no CreateBlob call). It must be
	// valid UTF-8 without NUL; SHA is then empty.
	Content *string
}

// Commit is a git commit as the reconcile logic needs it.
type Commit struct {
	SHA     string
	Tree    string
	Parents []string
	Message string
	// Verified is GitHub's signature verification verdict.
	Verified           bool
	VerificationReason string
}

// Branch is the branch endpoint's view.
type Branch struct {
	Name      string
	SHA       string
	Protected bool
}

// Rule is one rule from GET /repos/{o}/{r}/rules/branches/{branch}, kept raw
// so that rule types this code does not know still reach the policy check
// (which blocks on them, FX7).
type Rule struct {
	Type              string          `json:"type"`
	RulesetID         int64           `json:"ruleset_id"`
	RulesetSourceType string          `json:"ruleset_source_type"`
	RulesetSource     string          `json:"ruleset_source"`
	Parameters        json.RawMessage `json:"parameters,omitempty"`
}

// DraftPullRequest describes the one draft pull request of a fix.
type DraftPullRequest struct {
	Title string
	Body  string
	// Head is a bot branch of this repository.
	Head string
	// Base is the default branch (issue fixes) or the reviewed pull
	// request's head branch (stacked review fixes).
	Base string
}

// FileAddition adds or replaces a file in CommitOnBranch.
type FileAddition struct {
	Path     string
	Contents []byte
}

// CommitOnBranch is the input of a createCommitOnBranch commit.
type CommitOnBranch struct {
	Branch string
	// ExpectedHeadOID is the head the commit must fast-forward (required).
	ExpectedHeadOID string
	Headline        string
	Body            string
	Additions       []FileAddition
	Deletions       []string
}

// CheckRun is a check run to create or update.
type CheckRun struct {
	Name       string
	HeadSHA    string // create only
	ExternalID string
	// Status is "queued", "in_progress" or "completed".
	Status string
	// Conclusion is required with status completed.
	Conclusion string
	Title      string
	Summary    string
	Text       string
}

// ReviewComment is one line comment of a review.
type ReviewComment struct {
	Path string
	Line int
	// Side is "RIGHT" (default) or "LEFT".
	Side string
	Body string
}

// Fixer is the Fixer app's writer for one repository (token set
// github.SetFixer). It has no method of the review app's Reviewer, and
// neither type converts into the other.
type Fixer struct {
	c *github.Clients
}

// Reviewer is the review app's writer for one repository (token set
// github.SetReviewWrite, and github.SetCodeScanning for SARIF uploads).
type Reviewer struct {
	c *github.Clients

	// The SARIF token is asked for on first upload only, so an installation
	// without security_events can still publish reviews.
	conn         *github.Conn
	installation int64
	sarifMu      sync.Mutex
	sarif        *github.Clients
}

// NewFixer returns the Fixer for repo ("owner/name") through the Fixer
// app's installationID, with a token of exactly github.SetFixer.
func NewFixer(ctx context.Context, conn *github.Conn, installationID int64, repo string) (*Fixer, error) {
	c, err := conn.Clients(ctx, installationID, repo, github.SetFixer)
	if err != nil {
		return nil, fmt.Errorf("writer.NewFixer: %w", err)
	}
	return &Fixer{c: c}, nil
}

// NewReviewer returns the Reviewer for repo through the review app's
// installationID, with a token of exactly github.SetReviewWrite.
func NewReviewer(ctx context.Context, conn *github.Conn, installationID int64, repo string) (*Reviewer, error) {
	c, err := conn.Clients(ctx, installationID, repo, github.SetReviewWrite)
	if err != nil {
		return nil, fmt.Errorf("writer.NewReviewer: %w", err)
	}
	return &Reviewer{c: c, conn: conn, installation: installationID}, nil
}

func repoOf(c *github.Clients) string { return c.Owner + "/" + c.Name }

// CreateBlob stores content as a blob (base64, so any bytes survive).
func (w *Fixer) CreateBlob(ctx context.Context, content []byte) (string, error) {
	b, _, err := w.c.REST.Git.CreateBlob(ctx, w.c.Owner, w.c.Name, gh.Blob{
		Content: gh.Ptr(base64.StdEncoding.EncodeToString(content)), Encoding: gh.Ptr("base64"),
	})
	if err != nil {
		return "", github.WrapError("writer.CreateBlob", err)
	}
	return b.GetSHA(), nil
}

// CreateTree creates a tree on baseTree (required) with changes applied.
func (w *Fixer) CreateTree(ctx context.Context, baseTree string, changes []TreeChange) (string, error) {
	const op = "writer.CreateTree"
	if !sha1Hex.MatchString(baseTree) {
		return "", fmt.Errorf("%s: base tree %q is not a SHA", op, baseTree)
	}
	if len(changes) == 0 {
		return "", fmt.Errorf("%s: no changes", op)
	}
	entries := make([]*gh.TreeEntry, 0, len(changes))
	seen := map[string]bool{}
	for _, ch := range changes {
		if err := validPath(ch.Path); err != nil {
			return "", fmt.Errorf("%s: %w", op, err)
		}
		if seen[ch.Path] {
			return "", fmt.Errorf("%s: duplicate path %q", op, ch.Path)
		}
		seen[ch.Path] = true
		e := &gh.TreeEntry{Path: gh.Ptr(ch.Path), Type: gh.Ptr("blob")}
		if ch.Content != nil {
			if ch.SHA != "" || !utf8.ValidString(*ch.Content) || strings.ContainsRune(*ch.Content, 0) {
				return "", fmt.Errorf("%s: %s: inline content must be text and comes without a SHA", op, ch.Path)
			}
			if ch.Mode != "100644" && ch.Mode != "100755" {
				return "", fmt.Errorf("%s: %s: mode %q is not a regular file", op, ch.Path, ch.Mode)
			}
			e.Mode, e.Content = gh.Ptr(ch.Mode), ch.Content
		} else if ch.SHA == "" {
			// go-github sends "sha": null for an entry without SHA and
			// content: GitHub's deletion form.
			e.Mode = gh.Ptr("100644")
		} else {
			if ch.Mode != "100644" && ch.Mode != "100755" {
				return "", fmt.Errorf("%s: %s: mode %q is not a regular file", op, ch.Path, ch.Mode)
			}
			if !sha1Hex.MatchString(ch.SHA) {
				return "", fmt.Errorf("%s: %s: %q is not a SHA", op, ch.Path, ch.SHA)
			}
			e.Mode = gh.Ptr(ch.Mode)
			e.SHA = gh.Ptr(ch.SHA)
		}
		entries = append(entries, e)
	}
	t, _, err := w.c.REST.Git.CreateTree(ctx, w.c.Owner, w.c.Name, baseTree, entries)
	if err != nil {
		return "", github.WrapError(op, err)
	}
	return t.GetSHA(), nil
}

// CreateCommit creates a commit of tree with the single parent (no merge
// commits); author and committer are the app, as GitHub sets them.
func (w *Fixer) CreateCommit(ctx context.Context, message, tree, parent string) (string, error) {
	const op = "writer.CreateCommit"
	if !sha1Hex.MatchString(tree) || !sha1Hex.MatchString(parent) {
		return "", fmt.Errorf("%s: tree and parent must be SHAs", op)
	}
	if strings.TrimSpace(message) == "" {
		return "", fmt.Errorf("%s: empty message", op)
	}
	c, _, err := w.c.REST.Git.CreateCommit(ctx, w.c.Owner, w.c.Name, gh.Commit{
		Message: gh.Ptr(message), Tree: &gh.Tree{SHA: gh.Ptr(tree)}, Parents: []*gh.Commit{{SHA: gh.Ptr(parent)}},
	}, nil)
	if err != nil {
		return "", github.WrapError(op, err)
	}
	return c.GetSHA(), nil
}

// CreateBranch creates refs/heads/<branch> at sha with POST git/refs, which
// GitHub refuses (ErrConflict) when the ref exists; it never overwrites.
func (w *Fixer) CreateBranch(ctx context.Context, branch, sha string) error {
	op := "writer.CreateBranch " + branch
	if !IsBotBranch(branch) {
		return fmt.Errorf("%s: %w", op, ErrNotBotBranch)
	}
	if !sha1Hex.MatchString(sha) {
		return fmt.Errorf("%s: %q is not a SHA", op, sha)
	}
	_, _, err := w.c.REST.Git.CreateRef(ctx, w.c.Owner, w.c.Name, gh.CreateRef{Ref: "refs/heads/" + branch, SHA: sha})
	return github.WrapError(op, err)
}

// FastForwardBranch moves a bot branch to sha with force: false, so GitHub
// refuses anything but a fast-forward (ErrConflict).
func (w *Fixer) FastForwardBranch(ctx context.Context, branch, sha string) error {
	op := "writer.FastForwardBranch " + branch
	if !IsBotBranch(branch) {
		return fmt.Errorf("%s: %w", op, ErrNotBotBranch)
	}
	if !sha1Hex.MatchString(sha) {
		return fmt.Errorf("%s: %q is not a SHA", op, sha)
	}
	_, _, err := w.c.REST.Git.UpdateRef(ctx, w.c.Owner, w.c.Name, "heads/"+branch, gh.UpdateRef{SHA: sha, Force: gh.Ptr(false)})
	return github.WrapError(op, err)
}

// CreateDraftPullRequest opens pr as a draft (always draft: true).
func (w *Fixer) CreateDraftPullRequest(ctx context.Context, pr DraftPullRequest) (github.PullRequest, error) {
	op := "writer.CreateDraftPullRequest " + pr.Head
	if !IsBotBranch(pr.Head) {
		return github.PullRequest{}, fmt.Errorf("%s: %w", op, ErrNotBotBranch)
	}
	if pr.Base == "" || pr.Base == pr.Head || strings.TrimSpace(pr.Title) == "" {
		return github.PullRequest{}, fmt.Errorf("%s: base and title required", op)
	}
	p, _, err := w.c.REST.PullRequests.Create(ctx, w.c.Owner, w.c.Name, &gh.NewPullRequest{
		Title: gh.Ptr(pr.Title), Body: gh.Ptr(pr.Body), Head: gh.Ptr(pr.Head), Base: gh.Ptr(pr.Base),
		Draft: gh.Ptr(true), MaintainerCanModify: gh.Ptr(false),
	})
	if err != nil {
		return github.PullRequest{}, github.WrapError(op, err)
	}
	out := github.NewPullRequest(p)
	if !out.Draft {
		return out, fmt.Errorf("%s: GitHub created pull request #%d as non-draft", op, out.Number)
	}
	return out, nil
}

// CreateIssueComment comments on a pull request's conversation. With the
// Fixer's set this works on pull requests only (no issues write).
func (w *Fixer) CreateIssueComment(ctx context.Context, number int, body string) (int64, error) {
	return createIssueComment(ctx, w.c, number, body)
}

// CreateIssueComment comments on an issue or pull request conversation.
func (w *Reviewer) CreateIssueComment(ctx context.Context, number int, body string) (int64, error) {
	return createIssueComment(ctx, w.c, number, body)
}

func createIssueComment(ctx context.Context, c *github.Clients, number int, body string) (int64, error) {
	op := fmt.Sprintf("writer.CreateIssueComment %d", number)
	if number <= 0 || body == "" {
		return 0, fmt.Errorf("%s: number and body required", op)
	}
	cm, _, err := c.REST.Issues.CreateComment(ctx, c.Owner, c.Name, number, &gh.IssueComment{Body: gh.Ptr(body)})
	if err != nil {
		return 0, github.WrapError(op, err)
	}
	return cm.GetID(), nil
}

// CommitOnBranch creates one commit on a pull request's head branch with
// GraphQL createCommitOnBranch; expectedHeadOid makes GitHub refuse it
// unless the branch still points at ExpectedHeadOID. GitHub signs the
// commit and authors it as the app. Returns the new commit's oid.
func (w *Fixer) CommitOnBranch(ctx context.Context, in CommitOnBranch) (string, error) {
	op := "writer.CommitOnBranch " + in.Branch
	if in.Branch == "" || strings.HasPrefix(in.Branch, "refs/") {
		return "", fmt.Errorf("%s: unqualified branch name required", op)
	}
	if !sha1Hex.MatchString(in.ExpectedHeadOID) {
		return "", fmt.Errorf("%s: expectedHeadOid %q is not a SHA", op, in.ExpectedHeadOID)
	}
	if strings.TrimSpace(in.Headline) == "" || strings.ContainsAny(in.Headline, "\r\n") {
		return "", fmt.Errorf("%s: headline must be one non-empty line", op)
	}
	if len(in.Additions)+len(in.Deletions) == 0 {
		return "", fmt.Errorf("%s: no file changes", op)
	}
	adds := make([]githubv4.FileAddition, 0, len(in.Additions))
	for _, a := range in.Additions {
		if err := validPath(a.Path); err != nil {
			return "", fmt.Errorf("%s: %w", op, err)
		}
		adds = append(adds, githubv4.FileAddition{Path: githubv4.String(a.Path), Contents: githubv4.Base64String(base64.StdEncoding.EncodeToString(a.Contents))})
	}
	dels := make([]githubv4.FileDeletion, 0, len(in.Deletions))
	for _, d := range in.Deletions {
		if err := validPath(d); err != nil {
			return "", fmt.Errorf("%s: %w", op, err)
		}
		dels = append(dels, githubv4.FileDeletion{Path: githubv4.String(d)})
	}
	input := githubv4.CreateCommitOnBranchInput{
		Branch: githubv4.CommittableBranch{
			RepositoryNameWithOwner: githubv4.NewString(githubv4.String(repoOf(w.c))),
			BranchName:              githubv4.NewString(githubv4.String(in.Branch)),
		},
		Message:         githubv4.CommitMessage{Headline: githubv4.String(in.Headline)},
		ExpectedHeadOid: githubv4.GitObjectID(in.ExpectedHeadOID),
		FileChanges:     &githubv4.FileChanges{Additions: &adds, Deletions: &dels},
	}
	if in.Body != "" {
		input.Message.Body = githubv4.NewString(githubv4.String(in.Body))
	}
	var m struct {
		CreateCommitOnBranch struct {
			Commit struct {
				Oid githubv4.GitObjectID
			}
		} `graphql:"createCommitOnBranch(input: $input)"`
	}
	if err := w.c.GraphQL.Mutate(ctx, &m, input, nil); err != nil {
		return "", fmt.Errorf("%s: %w", op, commitOnBranchError(err))
	}
	oid := string(m.CreateCommitOnBranch.Commit.Oid)
	if !sha1Hex.MatchString(oid) {
		return "", fmt.Errorf("%s: no commit oid in the response", op)
	}
	return oid, nil
}

// ErrHeadMoved: createCommitOnBranch refused the commit because the branch
// no longer points at expectedHeadOid (GraphQL error type STALE_DATA). It
// is also github.ErrConflict: nothing was written, and writing again with
// the same expected head can never succeed.
var ErrHeadMoved = errors.New("writer: the branch no longer points at the expected head")

// commitOnBranchError classifies a createCommitOnBranch failure. githubv4
// hands over only the messages of GraphQL errors, so the refusals GitHub
// documents are recognised by their text: a stale head (STALE_DATA),
// classic protection (BRANCH_PROTECTION_RULE_VIOLATION), repository rules,
// a workflow file without the workflows permission, a token without
// access. Each of these wrote nothing and is permanent. Anything else (a
// transport error, a 5xx, an unknown message) may have written: the
// caller reconciles before it writes again.
func commitOnBranchError(err error) error {
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "expected branch to point to"):
		return fmt.Errorf("%w: %w: %w", ErrHeadMoved, github.ErrConflict, err)
	case strings.Contains(msg, "changes must be made through a pull request"),
		strings.Contains(msg, "protected branch"),
		strings.Contains(msg, "repository rule violations found"),
		strings.Contains(msg, "refusing to allow a github app"):
		return fmt.Errorf("%w: %w", github.ErrConflict, err)
	case strings.Contains(msg, "resource not accessible by integration"):
		return fmt.Errorf("%w: %w", github.ErrForbidden, err)
	case strings.Contains(msg, "could not resolve to a ref"):
		return fmt.Errorf("%w: %w", github.ErrNotFound, err)
	}
	return err
}

// BranchHead returns the SHA refs/heads/<branch> points at, or
// github.ErrNotFound.
func (w *Fixer) BranchHead(ctx context.Context, branch string) (string, error) {
	op := "writer.BranchHead " + branch
	if err := validBranch(branch); err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	ref, _, err := w.c.REST.Git.GetRef(ctx, w.c.Owner, w.c.Name, "heads/"+branch)
	if err != nil {
		return "", github.WrapError(op, err)
	}
	if ref.GetRef() != "refs/heads/"+branch {
		return "", fmt.Errorf("%s: %w: got %q", op, github.ErrNotFound, ref.GetRef())
	}
	return ref.GetObject().GetSHA(), nil
}

// Commit returns the git commit sha.
func (w *Fixer) Commit(ctx context.Context, sha string) (Commit, error) {
	op := "writer.Commit " + sha
	if !sha1Hex.MatchString(sha) {
		return Commit{}, fmt.Errorf("%s: not a SHA", op)
	}
	c, _, err := w.c.REST.Git.GetCommit(ctx, w.c.Owner, w.c.Name, sha)
	if err != nil {
		return Commit{}, github.WrapError(op, err)
	}
	out := Commit{
		SHA: c.GetSHA(), Tree: c.GetTree().GetSHA(), Message: c.GetMessage(),
		Verified: c.GetVerification().GetVerified(), VerificationReason: c.GetVerification().GetReason(),
	}
	for _, p := range c.Parents {
		out.Parents = append(out.Parents, p.GetSHA())
	}
	return out, nil
}

// MaxTreeEntries bounds the recursive tree listing the publish-time
// re-validation reads (GitHub truncates at 100,000 entries; a truncated
// listing is an error, never a partial base).
const MaxTreeEntries = 100_000

// TreeEntry is one entry of a recursive tree listing.
type TreeEntry struct {
	Path, Mode, Type, SHA string
}

// Tree lists tree sha recursively with the Fixer's own token (the fresh
// listing the publisher validates a patch against). A truncated listing
// is github.ErrTooLarge.
func (w *Fixer) Tree(ctx context.Context, sha string) ([]TreeEntry, error) {
	op := "writer.Tree " + sha
	if !sha1Hex.MatchString(sha) {
		return nil, fmt.Errorf("%s: not a SHA", op)
	}
	t, _, err := w.c.REST.Git.GetTree(ctx, w.c.Owner, w.c.Name, sha, true)
	if err != nil {
		return nil, github.WrapError(op, err)
	}
	if t.GetTruncated() || len(t.Entries) > MaxTreeEntries {
		return nil, fmt.Errorf("%s: %w: the listing is truncated", op, github.ErrTooLarge)
	}
	out := make([]TreeEntry, 0, len(t.Entries))
	for _, e := range t.Entries {
		out = append(out, TreeEntry{Path: e.GetPath(), Mode: e.GetMode(), Type: e.GetType(), SHA: e.GetSHA()})
	}
	return out, nil
}

// Blob returns the content of blob sha, refusing one over max bytes.
func (w *Fixer) Blob(ctx context.Context, sha string, max int) ([]byte, error) {
	op := "writer.Blob " + sha
	if !sha1Hex.MatchString(sha) {
		return nil, fmt.Errorf("%s: not a SHA", op)
	}
	b, _, err := w.c.REST.Git.GetBlob(ctx, w.c.Owner, w.c.Name, sha)
	if err != nil {
		return nil, github.WrapError(op, err)
	}
	if b.GetSize() > max {
		return nil, fmt.Errorf("%s: %w: %d bytes", op, github.ErrTooLarge, b.GetSize())
	}
	if b.GetEncoding() != "base64" {
		return nil, fmt.Errorf("%s: unexpected encoding %q", op, b.GetEncoding())
	}
	data, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(b.GetContent()), ""))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if len(data) > max {
		return nil, fmt.Errorf("%s: %w: %d bytes", op, github.ErrTooLarge, len(data))
	}
	return data, nil
}

// Branch returns the branch name with its protection flag. A renamed
// branch (GitHub redirects) is not followed: it reads as not found.
func (w *Fixer) Branch(ctx context.Context, name string) (Branch, error) {
	op := "writer.Branch " + name
	if err := validBranch(name); err != nil {
		return Branch{}, fmt.Errorf("%s: %w", op, err)
	}
	b, resp, err := w.c.REST.Repositories.GetBranch(ctx, w.c.Owner, w.c.Name, name, 0)
	if err != nil {
		// GetBranch reports statuses as plain errors, not ErrorResponse; a
		// 301 is a renamed branch, which is not the branch asked for.
		if resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMovedPermanently) {
			return Branch{}, fmt.Errorf("%s: %w: %w", op, github.ErrNotFound, err)
		}
		return Branch{}, github.WrapError(op, err)
	}
	if b.GetName() != name {
		return Branch{}, fmt.Errorf("%s: %w: answered for %q", op, github.ErrNotFound, b.GetName())
	}
	return Branch{Name: b.GetName(), SHA: b.GetCommit().GetSHA(), Protected: b.GetProtected()}, nil
}

// BranchRules returns every rule that applies to branch, all pages.
func (w *Fixer) BranchRules(ctx context.Context, branch string) ([]Rule, error) {
	op := "writer.BranchRules " + branch
	if err := validBranch(branch); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var out []Rule
	for page := 1; ; page++ {
		if page > MaxRulePages {
			return nil, fmt.Errorf("%s: %w: more than %d pages", op, github.ErrTooLarge, MaxRulePages)
		}
		u := fmt.Sprintf("repos/%s/%s/rules/branches/%s?per_page=100&page=%d", w.c.Owner, w.c.Name, branch, page)
		req, err := w.c.REST.NewRequest("GET", u, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		var rules []Rule
		resp, err := w.c.REST.Do(ctx, req, &rules)
		if err != nil {
			return nil, github.WrapError(op, err)
		}
		out = append(out, rules...)
		if resp.NextPage == 0 || len(rules) == 0 {
			return out, nil
		}
	}
}

// PullRequestsByHead lists pull requests of any state whose head is branch
// in this repository (the reconcile read of FX11).
func (w *Fixer) PullRequestsByHead(ctx context.Context, branch string) ([]github.PullRequest, error) {
	op := "writer.PullRequestsByHead " + branch
	if err := validBranch(branch); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	prs, _, err := w.c.REST.PullRequests.List(ctx, w.c.Owner, w.c.Name, &gh.PullRequestListOptions{
		State: "all", Head: w.c.Owner + ":" + branch, ListOptions: gh.ListOptions{PerPage: 100},
	})
	if err != nil {
		return nil, github.WrapError(op, err)
	}
	out := make([]github.PullRequest, 0, len(prs))
	for _, p := range prs {
		pr := github.NewPullRequest(p)
		if pr.HeadRef == branch {
			out = append(out, pr)
		}
	}
	return out, nil
}

// CreateReview posts a review with event COMMENT.
func (w *Reviewer) CreateReview(ctx context.Context, number int, commitSHA, body string, comments []ReviewComment) (int64, error) {
	op := fmt.Sprintf("writer.CreateReview %d", number)
	if number <= 0 || !sha1Hex.MatchString(commitSHA) {
		return 0, fmt.Errorf("%s: number and commit SHA required", op)
	}
	req := &gh.PullRequestReviewRequest{CommitID: gh.Ptr(commitSHA), Body: gh.Ptr(body), Event: gh.Ptr("COMMENT")}
	for _, c := range comments {
		if err := validPath(c.Path); err != nil || c.Line <= 0 || c.Body == "" {
			return 0, fmt.Errorf("%s: invalid comment on %q line %d", op, c.Path, c.Line)
		}
		side := c.Side
		if side == "" {
			side = "RIGHT"
		}
		if side != "RIGHT" && side != "LEFT" {
			return 0, fmt.Errorf("%s: invalid side %q", op, side)
		}
		req.Comments = append(req.Comments, &gh.DraftReviewComment{Path: gh.Ptr(c.Path), Line: gh.Ptr(c.Line), Side: gh.Ptr(side), Body: gh.Ptr(c.Body)})
	}
	r, _, err := w.c.REST.PullRequests.CreateReview(ctx, w.c.Owner, w.c.Name, number, req)
	if err != nil {
		return 0, github.WrapError(op, err)
	}
	return r.GetID(), nil
}

func checkOutput(run CheckRun) *gh.CheckRunOutput {
	if run.Title == "" && run.Summary == "" && run.Text == "" {
		return nil
	}
	out := &gh.CheckRunOutput{Title: gh.Ptr(run.Title), Summary: gh.Ptr(run.Summary)}
	if run.Text != "" {
		out.Text = gh.Ptr(run.Text)
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CreateCheckRun creates a check run on run.HeadSHA.
func (w *Reviewer) CreateCheckRun(ctx context.Context, run CheckRun) (int64, error) {
	op := "writer.CreateCheckRun " + run.Name
	if run.Name == "" || !sha1Hex.MatchString(run.HeadSHA) {
		return 0, fmt.Errorf("%s: name and head SHA required", op)
	}
	cr, _, err := w.c.REST.Checks.CreateCheckRun(ctx, w.c.Owner, w.c.Name, gh.CreateCheckRunOptions{
		Name: run.Name, HeadSHA: run.HeadSHA, ExternalID: optional(run.ExternalID),
		Status: optional(run.Status), Conclusion: optional(run.Conclusion), Output: checkOutput(run),
	})
	if err != nil {
		return 0, github.WrapError(op, err)
	}
	return cr.GetID(), nil
}

// UpdateCheckRun updates check run id.
func (w *Reviewer) UpdateCheckRun(ctx context.Context, id int64, run CheckRun) error {
	op := fmt.Sprintf("writer.UpdateCheckRun %d", id)
	if id <= 0 || run.Name == "" {
		return fmt.Errorf("%s: id and name required", op)
	}
	_, _, err := w.c.REST.Checks.UpdateCheckRun(ctx, w.c.Owner, w.c.Name, id, gh.UpdateCheckRunOptions{
		Name: run.Name, ExternalID: optional(run.ExternalID),
		Status: optional(run.Status), Conclusion: optional(run.Conclusion), Output: checkOutput(run),
	})
	return github.WrapError(op, err)
}

// EncodeSARIF returns the gzip+base64 form GitHub expects, refusing with
// github.ErrTooLarge when the compressed size exceeds MaxSARIFBytes.
func EncodeSARIF(sarif []byte) (string, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(sarif); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if buf.Len() > MaxSARIFBytes {
		return "", fmt.Errorf("%w: compressed SARIF is %d bytes, limit %d", github.ErrTooLarge, buf.Len(), MaxSARIFBytes)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

func (w *Reviewer) UploadSARIF(ctx context.Context, commitSHA, ref string, sarif []byte) (string, error) {
	const op = "writer.UploadSARIF"
	if !sha1Hex.MatchString(commitSHA) || !strings.HasPrefix(ref, "refs/") {
		return "", fmt.Errorf("%s: commit SHA and full ref required", op)
	}
	if !json.Valid(sarif) {
		return "", fmt.Errorf("%s: SARIF is not JSON", op)
	}
	encoded, err := EncodeSARIF(sarif)
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	c, err := w.sarifClients(ctx)
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	id, _, err := c.REST.CodeScanning.UploadSarif(ctx, c.Owner, c.Name, &gh.SarifAnalysis{
		CommitSHA: gh.Ptr(commitSHA), Ref: gh.Ptr(ref), Sarif: gh.Ptr(encoded),
	})
	if err != nil {
		return "", github.WrapError(op, err)
	}
	return id.GetID(), nil
}

func (w *Reviewer) sarifClients(ctx context.Context) (*github.Clients, error) {
	w.sarifMu.Lock()
	defer w.sarifMu.Unlock()
	if w.sarif == nil {
		c, err := w.conn.Clients(ctx, w.installation, repoOf(w.c), github.SetCodeScanning)
		if err != nil {
			return nil, err
		}
		w.sarif = c
	}
	return w.sarif, nil
}

func validPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." || p == ".." ||
		strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("invalid path %q", p)
	}
	return nil
}

var branchPattern = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,255}$`)

func validBranch(b string) error {
	if !branchPattern.MatchString(b) || strings.Contains(b, "..") || strings.HasPrefix(b, "/") ||
		strings.HasSuffix(b, "/") || strings.HasPrefix(b, "refs/") {
		return fmt.Errorf("invalid branch %q", b)
	}
	return nil
}
