package githubfake

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	graphql "github.com/graph-gophers/graphql-go"
)

// graphqlSchema is the slice of GitHub's schema Quavon uses, with GitHub's
// type, field and argument names so real queries validate unchanged.
const graphqlSchema = `
schema { query: Query mutation: Mutation }
scalar GitObjectID
scalar Base64String
scalar URI
scalar DateTime

type Query {
  repository(owner: String!, name: String!, followRenames: Boolean = true): Repository
  rateLimit(dryRun: Boolean = false): RateLimit
}
type Mutation {
  createCommitOnBranch(input: CreateCommitOnBranchInput!): CreateCommitOnBranchPayload
}
type RateLimit { cost: Int! limit: Int! remaining: Int! used: Int! resetAt: DateTime! nodeCount: Int! }

input CreateCommitOnBranchInput {
  branch: CommittableBranch!
  clientMutationId: String
  expectedHeadOid: GitObjectID!
  fileChanges: FileChanges
  message: CommitMessage!
}
input CommittableBranch { branchName: String id: ID repositoryNameWithOwner: String }
input CommitMessage { body: String headline: String! }
input FileChanges { additions: [FileAddition!] deletions: [FileDeletion!] }
input FileAddition { contents: Base64String! path: String! }
input FileDeletion { path: String! }

type CreateCommitOnBranchPayload { clientMutationId: String commit: Commit ref: Ref }

type Actor { login: String! }
type RepositoryOwner { id: ID! login: String! }
type GitSignature { isValid: Boolean! state: String! wasSignedByGitHub: Boolean! }
type Tree { oid: GitObjectID! }
type CommitConnection { totalCount: Int! nodes: [Commit] }
type Commit {
  id: ID!
  oid: GitObjectID!
  abbreviatedOid: String!
  url: URI!
  message: String!
  messageHeadline: String!
  messageBody: String!
  committedDate: DateTime!
  signature: GitSignature
  tree: Tree!
  parents(first: Int, after: String): CommitConnection!
}
type Ref { id: ID! name: String! prefix: String! target: Commit }

type Repository {
  id: ID!
  databaseId: Int
  name: String!
  nameWithOwner: String!
  owner: RepositoryOwner!
  isPrivate: Boolean!
  isFork: Boolean!
  url: URI!
  defaultBranchRef: Ref
  ref(qualifiedName: String!): Ref
  pullRequest(number: Int!): PullRequest
  issue(number: Int!): Issue
}

enum PullRequestState { OPEN CLOSED MERGED }
enum IssueState { OPEN CLOSED }

type PageInfo { hasNextPage: Boolean! hasPreviousPage: Boolean! startCursor: String endCursor: String }
type IssueEdge { cursor: String! node: Issue }
type IssueConnection { totalCount: Int! nodes: [Issue] edges: [IssueEdge] pageInfo: PageInfo! }

type PullRequest {
  id: ID!
  databaseId: Int
  number: Int!
  title: String!
  body: String!
  state: PullRequestState!
  isDraft: Boolean!
  url: URI!
  author: Actor
  headRefName: String!
  headRefOid: GitObjectID!
  baseRefName: String!
  headRepository: Repository
  baseRepository: Repository
  isCrossRepository: Boolean!
  closingIssuesReferences(first: Int, last: Int, after: String, before: String, userLinkedOnly: Boolean = false): IssueConnection
}

type Issue {
  id: ID!
  databaseId: Int
  number: Int!
  title: String!
  body: String!
  state: IssueState!
  url: URI!
  author: Actor
  repository: Repository!
}
`

// Scalars.

type gitObjectID string

func (gitObjectID) ImplementsGraphQLType(name string) bool { return name == "GitObjectID" }
func (g *gitObjectID) UnmarshalGraphQL(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("GitObjectID must be a string")
	}
	*g = gitObjectID(s)
	return nil
}
func (g gitObjectID) MarshalJSON() ([]byte, error) { return json.Marshal(string(g)) }

type base64String string

func (base64String) ImplementsGraphQLType(name string) bool { return name == "Base64String" }
func (b *base64String) UnmarshalGraphQL(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("Base64String must be a string")
	}
	*b = base64String(s)
	return nil
}
func (b base64String) MarshalJSON() ([]byte, error) { return json.Marshal(string(b)) }

type uri string

func (uri) ImplementsGraphQLType(name string) bool { return name == "URI" }
func (u *uri) UnmarshalGraphQL(v any) error {
	s, _ := v.(string)
	*u = uri(s)
	return nil
}
func (u uri) MarshalJSON() ([]byte, error) { return json.Marshal(string(u)) }

type dateTime time.Time

func (dateTime) ImplementsGraphQLType(name string) bool { return name == "DateTime" }
func (d *dateTime) UnmarshalGraphQL(v any) error {
	s, _ := v.(string)
	t, err := time.Parse(time.RFC3339, s)
	*d = dateTime(t)
	return err
}
func (d dateTime) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Time(d).UTC().Format(time.RFC3339))
}

// gqlError carries GitHub's top-level "type" (NOT_FOUND, FORBIDDEN,
// STALE_DATA, UNPROCESSABLE).
type gqlError struct{ typ, msg string }

func (e *gqlError) Error() string                   { return e.msg }
func (e *gqlError) Extensions() map[string]any      { return map[string]any{"type": e.typ} }
func gqlErr(typ, format string, a ...any) *gqlError { return &gqlError{typ, fmt.Sprintf(format, a...)} }

type ctxKey struct{}

func callFrom(ctx context.Context) *call { return ctx.Value(ctxKey{}).(*call) }

func (c *call) noteGraphQL(field string) {
	if !slices.Contains(strings.Split(c.gql, ","), field) {
		if c.gql != "" {
			c.gql += ","
		}
		c.gql += field
	}
}

func (s *Server) handleGraphQL(c *call) {
	if c.kind != TokenInstallation {
		c.json(http.StatusUnauthorized, map[string]any{
			"message":           "This endpoint requires you to be authenticated.",
			"documentation_url": "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql",
		})
		return
	}
	var req struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
	}
	if !c.decode(&req) {
		return
	}
	ctx := context.WithValue(c.r.Context(), ctxKey{}, c)
	res := s.schema.Exec(ctx, req.Query, req.OperationName, req.Variables)
	out := map[string]any{}
	if res.Data != nil {
		out["data"] = res.Data
	}
	if len(res.Errors) > 0 {
		var errs []any
		for _, e := range res.Errors {
			m := map[string]any{"message": e.Message}
			if len(e.Locations) > 0 {
				m["locations"] = e.Locations
			}
			if len(e.Path) > 0 {
				m["path"] = e.Path
			}
			if t, ok := e.Extensions["type"]; ok {
				m["type"] = t
			}
			errs = append(errs, m)
		}
		out["errors"] = errs
	}
	c.json(http.StatusOK, out)
}

// --- resolvers ---

type gqlRoot struct{ s *Server }

func (q *gqlRoot) RateLimit(ctx context.Context, _ struct{ DryRun bool }) *gqlRateLimit {
	c := callFrom(ctx)
	used := q.s.rateUsed[q.s.rateBucket(c)] + 1
	return &gqlRateLimit{Cost: 1, Limit: rateLimitInstallation, Remaining: int32(rateLimitInstallation - used), Used: int32(used),
		ResetAt: dateTime(q.s.now().Truncate(time.Hour).Add(time.Hour)), NodeCount: 1}
}

type gqlRateLimit struct {
	Cost, Limit, Remaining, Used, NodeCount int32
	ResetAt                                 dateTime
}

// readable reports whether the installation token may read r, writing the
// GraphQL error GitHub gives otherwise.
func (c *call) gqlRepo(owner, name string) (*Repo, error) {
	r := c.s.repos[strings.ToLower(owner+"/"+name)]
	if r == nil || !c.tokenCovers(r) && r.Private {
		return nil, gqlErr("NOT_FOUND", "Could not resolve to a Repository with the name '%s/%s'.", owner, name)
	}
	return r, nil
}

func (c *call) tokenCovers(r *Repo) bool {
	t := c.tok
	return t.inst.covers(r) && (t.repos == nil || slices.Contains(t.repos, strings.ToLower(r.FullName())))
}

func (c *call) gqlCan(r *Repo, perm, level string) bool {
	if c.tokenCovers(r) && levelRank(c.tok.perms[perm]) >= levelRank(level) {
		return true
	}
	return level == Read && !r.Private
}

func (q *gqlRoot) Repository(ctx context.Context, args struct {
	Owner, Name   string
	FollowRenames bool
}) (*gqlRepo, error) {
	c := callFrom(ctx)
	c.noteGraphQL("repository")
	r, err := c.gqlRepo(args.Owner, args.Name)
	if err != nil {
		return nil, err
	}
	return &gqlRepo{c: c, r: r}, nil
}

type gqlRepo struct {
	c *call
	r *Repo
}

func (g *gqlRepo) ID() graphql.ID        { return graphql.ID(nodeID("R", g.r.ID)) }
func (g *gqlRepo) DatabaseID() *int32    { v := int32(g.r.ID); return &v }
func (g *gqlRepo) Name() string          { return g.r.Name }
func (g *gqlRepo) NameWithOwner() string { return g.r.FullName() }
func (g *gqlRepo) IsPrivate() bool       { return g.r.Private }
func (g *gqlRepo) IsFork() bool          { return g.r.Parent != nil }
func (g *gqlRepo) URL() uri              { return uri("https://github.com/" + g.r.FullName()) }
func (g *gqlRepo) Owner() *gqlOwner      { return &gqlOwner{g.r.Owner} }

type gqlOwner struct{ a *Account }

func (o *gqlOwner) ID() graphql.ID { return graphql.ID(nodeID("U", o.a.ID)) }
func (o *gqlOwner) Login() string  { return o.a.Login }

func (g *gqlRepo) DefaultBranchRef() *gqlRef {
	return g.ref("refs/heads/" + g.r.DefaultBranch)
}

func (g *gqlRepo) Ref(args struct{ QualifiedName string }) *gqlRef {
	name := args.QualifiedName
	if !strings.HasPrefix(name, "refs/") {
		name = "refs/heads/" + name
	}
	return g.ref(name)
}

func (g *gqlRepo) ref(name string) *gqlRef {
	h, ok := g.r.refHash(name)
	if !ok {
		return nil
	}
	return &gqlRef{r: g.r, name: name, hash: h}
}

type gqlRef struct {
	r    *Repo
	name string
	hash plumbing.Hash
}

func (f *gqlRef) ID() graphql.ID {
	return graphql.ID("REF_" + base64.RawURLEncoding.EncodeToString([]byte(f.name)))
}
func (f *gqlRef) split() (prefix, name string) {
	for _, p := range []string{"refs/heads/", "refs/tags/"} {
		if n, ok := strings.CutPrefix(f.name, p); ok {
			return p, n
		}
	}
	return "", f.name
}
func (f *gqlRef) Name() string   { _, n := f.split(); return n }
func (f *gqlRef) Prefix() string { p, _ := f.split(); return p }
func (f *gqlRef) Target() *gqlCommit {
	return &gqlCommit{r: f.r, hash: f.hash}
}

type gqlCommit struct {
	r    *Repo
	hash plumbing.Hash
}

func (g *gqlCommit) commit() *object.Commit {
	c, _ := object.GetCommit(g.r.st, g.hash)
	if c == nil {
		return &object.Commit{}
	}
	return c
}
func (g *gqlCommit) ID() graphql.ID         { return graphql.ID("C_" + g.hash.String()[:20]) }
func (g *gqlCommit) Oid() gitObjectID       { return gitObjectID(g.hash.String()) }
func (g *gqlCommit) AbbreviatedOid() string { return g.hash.String()[:7] }
func (g *gqlCommit) URL() uri {
	return uri("https://github.com/" + g.r.FullName() + "/commit/" + g.hash.String())
}
func (g *gqlCommit) Message() string { return g.commit().Message }
func (g *gqlCommit) MessageHeadline() string {
	h, _, _ := strings.Cut(g.commit().Message, "\n")
	return h
}
func (g *gqlCommit) MessageBody() string {
	_, b, _ := strings.Cut(g.commit().Message, "\n")
	return strings.TrimLeft(b, "\n")
}
func (g *gqlCommit) CommittedDate() dateTime { return dateTime(g.commit().Committer.When) }
func (g *gqlCommit) Signature() *gqlSignature {
	if !g.r.verified[g.hash] {
		return nil
	}
	return &gqlSignature{IsValid: true, State: "VALID", WasSignedByGitHub: true}
}
func (g *gqlCommit) Tree() *gqlTree { return &gqlTree{Oid: gitObjectID(g.commit().TreeHash.String())} }
func (g *gqlCommit) Parents(_ struct {
	First *int32
	After *string
}) *gqlCommitConn {
	nodes := []*gqlCommit{}
	for _, p := range g.commit().ParentHashes {
		nodes = append(nodes, &gqlCommit{r: g.r, hash: p})
	}
	return &gqlCommitConn{TotalCount: int32(len(nodes)), Nodes: &nodes}
}

type gqlSignature struct {
	IsValid           bool
	State             string
	WasSignedByGitHub bool
}
type gqlTree struct{ Oid gitObjectID }
type gqlCommitConn struct {
	TotalCount int32
	Nodes      *[]*gqlCommit
}

func (g *gqlRepo) PullRequest(args struct{ Number int32 }) (*gqlPull, error) {
	in := g.r.issues[int(args.Number)]
	if !g.c.gqlCan(g.r, "pull_requests", Read) {
		return nil, gqlErr("FORBIDDEN", "Resource not accessible by integration")
	}
	if in == nil || in.PullRequest == nil {
		return nil, gqlErr("NOT_FOUND", "Could not resolve to a PullRequest with the number of %d.", args.Number)
	}
	return &gqlPull{c: g.c, r: g.r, in: in}, nil
}

func (g *gqlRepo) Issue(args struct{ Number int32 }) (*gqlIssue, error) {
	in := g.r.issues[int(args.Number)]
	if !g.c.gqlCan(g.r, "issues", Read) {
		return nil, gqlErr("FORBIDDEN", "Resource not accessible by integration")
	}
	if in == nil || in.PullRequest != nil {
		return nil, gqlErr("NOT_FOUND", "Could not resolve to an Issue with the number of %d.", args.Number)
	}
	return &gqlIssue{c: g.c, r: g.r, in: in}, nil
}

type gqlPull struct {
	c  *call
	r  *Repo
	in *Issue
}

func (p *gqlPull) ID() graphql.ID     { return graphql.ID(nodeID("PR", p.in.ID)) }
func (p *gqlPull) DatabaseID() *int32 { v := int32(p.in.ID); return &v }
func (p *gqlPull) Number() int32      { return int32(p.in.Number) }
func (p *gqlPull) Title() string      { return p.in.Title }
func (p *gqlPull) Body() string       { return p.in.Body }
func (p *gqlPull) State() string {
	switch {
	case p.in.PullRequest.Merged:
		return "MERGED"
	case p.in.State == "closed":
		return "CLOSED"
	}
	return "OPEN"
}
func (p *gqlPull) IsDraft() bool { return p.in.PullRequest.Draft }
func (p *gqlPull) URL() uri {
	return uri(fmt.Sprintf("https://github.com/%s/pull/%d", p.r.FullName(), p.in.Number))
}
func (p *gqlPull) Author() *gqlActor       { return &gqlActor{Login: p.in.Author} }
func (p *gqlPull) HeadRefName() string     { return p.in.PullRequest.Head }
func (p *gqlPull) HeadRefOid() gitObjectID { return gitObjectID(p.r.prHeadSHA(p.in.PullRequest)) }
func (p *gqlPull) BaseRefName() string     { return p.in.PullRequest.Base }
func (p *gqlPull) HeadRepository() *gqlRepo {
	hr := p.r.prHeadRepo(p.in.PullRequest)
	if hr == nil || (hr.Private && !p.c.tokenCovers(hr)) {
		return nil
	}
	return &gqlRepo{c: p.c, r: hr}
}
func (p *gqlPull) BaseRepository() *gqlRepo { return &gqlRepo{c: p.c, r: p.r} }
func (p *gqlPull) IsCrossRepository() bool {
	return !strings.EqualFold(p.in.PullRequest.HeadRepo, p.r.FullName())
}

type gqlActor struct{ Login string }

// ClosingIssuesReferences lists the linked issues the token can see,
// including issues of other repositories (the client must filter).
func (p *gqlPull) ClosingIssuesReferences(args struct {
	First, Last    *int32
	After, Before  *string
	UserLinkedOnly bool
}) (*gqlIssueConn, error) {
	if args.First == nil && args.Last == nil {
		return nil, gqlErr("MISSING_PAGINATION_BOUNDARIES", "You must provide a `first` or `last` value to properly paginate the `closingIssuesReferences` connection.")
	}
	conn := &gqlIssueConn{PageInfo: &gqlPageInfo{}, Nodes: &[]*gqlIssue{}, Edges: &[]*gqlIssueEdge{}}
	for _, ref := range p.r.closing[p.in.Number] {
		ir := p.c.s.repos[ref.repo]
		if ir == nil || !p.c.gqlCan(ir, "issues", Read) {
			continue
		}
		in := ir.issues[ref.number]
		if in == nil || in.PullRequest != nil {
			continue
		}
		conn.all = append(conn.all, &gqlIssue{c: p.c, r: ir, in: in})
	}
	conn.TotalCount = int32(len(conn.all))
	start := 0
	if args.After != nil {
		fmt.Sscanf(*args.After, "cursor:%d", &start)
	}
	n := len(conn.all) - start
	if args.First != nil && int(*args.First) < n {
		n = int(*args.First)
	}
	if args.First != nil && (*args.First < 0 || *args.First > 100) {
		return nil, gqlErr("EXCESSIVE_PAGINATION", "Requesting %d records on the `closingIssuesReferences` connection exceeds the `first` limit of 100 records.", *args.First)
	}
	for i := start; i < start+n && i < len(conn.all); i++ {
		*conn.Nodes = append(*conn.Nodes, conn.all[i])
		cur := fmt.Sprintf("cursor:%d", i+1)
		*conn.Edges = append(*conn.Edges, &gqlIssueEdge{Cursor: cur, Node: conn.all[i]})
		conn.PageInfo.EndCursor = &cur
	}
	conn.PageInfo.HasNextPage = start+n < len(conn.all)
	conn.PageInfo.HasPreviousPage = start > 0
	if len(*conn.Edges) > 0 {
		conn.PageInfo.StartCursor = &(*conn.Edges)[0].Cursor
	}
	return conn, nil
}

type gqlIssueConn struct {
	TotalCount int32
	Nodes      *[]*gqlIssue
	Edges      *[]*gqlIssueEdge
	PageInfo   *gqlPageInfo
	all        []*gqlIssue
}
type gqlIssueEdge struct {
	Cursor string
	Node   *gqlIssue
}
type gqlPageInfo struct {
	HasNextPage, HasPreviousPage bool
	StartCursor, EndCursor       *string
}

type gqlIssue struct {
	c  *call
	r  *Repo
	in *Issue
}

func (i *gqlIssue) ID() graphql.ID     { return graphql.ID(nodeID("I", i.in.ID)) }
func (i *gqlIssue) DatabaseID() *int32 { v := int32(i.in.ID); return &v }
func (i *gqlIssue) Number() int32      { return int32(i.in.Number) }
func (i *gqlIssue) Title() string      { return i.in.Title }
func (i *gqlIssue) Body() string       { return i.in.Body }
func (i *gqlIssue) State() string      { return strings.ToUpper(i.in.State) }
func (i *gqlIssue) URL() uri {
	return uri(fmt.Sprintf("https://github.com/%s/issues/%d", i.r.FullName(), i.in.Number))
}
func (i *gqlIssue) Author() *gqlActor    { return &gqlActor{Login: i.in.Author} }
func (i *gqlIssue) Repository() *gqlRepo { return &gqlRepo{c: i.c, r: i.r} }

// --- createCommitOnBranch ---

type commitOnBranchInput struct {
	Branch struct {
		BranchName              *string
		ID                      *graphql.ID
		RepositoryNameWithOwner *string
	}
	ClientMutationID *string
	ExpectedHeadOid  gitObjectID
	FileChanges      *struct {
		Additions *[]struct {
			Contents base64String
			Path     string
		}
		Deletions *[]struct{ Path string }
	}
	Message struct {
		Body     *string
		Headline string
	}
}

type commitOnBranchPayload struct {
	ClientMutationID *string
	Commit           *gqlCommit
	Ref              *gqlRef
}

// CreateCommitOnBranch commits file changes on top of expectedHeadOid and
// moves the branch only if it still points there (compare-and-swap). The
// commit is authored by the app's bot and signed by GitHub.
func (q *gqlRoot) CreateCommitOnBranch(ctx context.Context, args struct{ Input commitOnBranchInput }) (*commitOnBranchPayload, error) {
	c := callFrom(ctx)
	c.noteGraphQL("createCommitOnBranch")
	in := args.Input
	var r *Repo
	switch {
	case in.Branch.RepositoryNameWithOwner != nil:
		owner, name, _ := strings.Cut(*in.Branch.RepositoryNameWithOwner, "/")
		var err error
		if r, err = c.gqlRepo(owner, name); err != nil {
			return nil, err
		}
	case in.Branch.ID != nil:
		return nil, gqlErr("NOT_FOUND", "Could not resolve to a node with the global id of '%s'", string(*in.Branch.ID))
	default:
		return nil, gqlErr("UNPROCESSABLE", "A repositoryNameWithOwner and branchName, or a branch id, are required.")
	}
	if in.Branch.BranchName == nil || *in.Branch.BranchName == "" {
		return nil, gqlErr("UNPROCESSABLE", "A repositoryNameWithOwner and branchName, or a branch id, are required.")
	}
	if !c.gqlCan(r, "contents", Write) {
		return nil, gqlErr("FORBIDDEN", "Resource not accessible by integration")
	}
	refName := "refs/heads/" + *in.Branch.BranchName
	head, ok := r.refHash(refName)
	if !ok {
		return nil, gqlErr("NOT_FOUND", "Could not resolve to a Ref with the name '%s'.", refName)
	}
	if string(in.ExpectedHeadOid) != head.String() {
		return nil, gqlErr("STALE_DATA", "Expected branch to point to \"%s\" but it did not.  Pull and try again.", string(in.ExpectedHeadOid))
	}
	if r.protected[*in.Branch.BranchName] {
		// Classic protection refuses every direct commit (recorded from
		// GitHub: type BRANCH_PROTECTION_RULE_VIOLATION).
		return nil, gqlErr("BRANCH_PROTECTION_RULE_VIOLATION", "Changes must be made through a pull request.")
	}
	if strings.TrimSpace(in.Message.Headline) == "" {
		return nil, gqlErr("UNPROCESSABLE", "A commit message headline is required.")
	}
	flat, err := r.flatTree(head)
	if err != nil {
		return nil, gqlErr("UNPROCESSABLE", "%v", err)
	}
	if fc := in.FileChanges; fc != nil {
		if fc.Deletions != nil {
			for _, d := range *fc.Deletions {
				if _, ok := flat[d.Path]; !ok {
					return nil, gqlErr("UNPROCESSABLE", "A path was requested for deletion which does not exist as of commit oid `%s`", head)
				}
				delete(flat, d.Path)
			}
		}
		if fc.Additions != nil {
			for _, a := range *fc.Additions {
				data, err := base64.StdEncoding.DecodeString(string(a.Contents))
				if err != nil {
					return nil, gqlErr("UNPROCESSABLE", "Variable $input of type CreateCommitOnBranchInput! was provided invalid value for fileChanges.additions.contents (Could not coerce value to Base64String)")
				}
				p := strings.Trim(a.Path, "/")
				if p == "" || slices.ContainsFunc(strings.Split(p, "/"), func(s string) bool { return s == "" || s == "." || s == ".." || s == ".git" }) {
					return nil, gqlErr("UNPROCESSABLE", "Invalid path: %s", a.Path)
				}
				h, err := r.storeBlob(data)
				if err != nil {
					return nil, gqlErr("UNPROCESSABLE", "%v", err)
				}
				mode := filemode.Regular
				if old, ok := flat[p]; ok && old.mode == filemode.Executable {
					mode = old.mode
				}
				removeUnder(flat, p)
				flat[p] = leaf{mode: mode, hash: h}
			}
		}
	}
	tree, err := r.buildTree(flat)
	if err != nil {
		return nil, gqlErr("UNPROCESSABLE", "%v", err)
	}
	msg := in.Message.Headline
	if in.Message.Body != nil && *in.Message.Body != "" {
		msg += "\n\n" + *in.Message.Body
	}
	now := c.s.now()
	author := signature(c.tok.inst.App.Bot, now)
	committer := object.Signature{Name: "GitHub", Email: "noreply@github.com", When: now}
	h, err := r.storeCommit(&object.Commit{Author: author, Committer: committer, Message: msg, TreeHash: tree, ParentHashes: []plumbing.Hash{head}})
	if err != nil {
		return nil, gqlErr("UNPROCESSABLE", "%v", err)
	}
	r.verified[h] = true
	if v := r.checkRefWrite(refName, "update", false, h); v != "" {
		return nil, gqlErr("UNPROCESSABLE", "%s", strings.TrimSpace(v))
	}
	if v := r.checkWorkflows(c, head, h); v != "" {
		return nil, gqlErr("UNPROCESSABLE", "%s", v)
	}
	if err := r.st.CheckAndSetReference(plumbing.NewHashReference(plumbing.ReferenceName(refName), h), plumbing.NewHashReference(plumbing.ReferenceName(refName), head)); err != nil {
		return nil, gqlErr("STALE_DATA", "Expected branch to point to \"%s\" but it did not.  Pull and try again.", string(in.ExpectedHeadOid))
	}
	r.pushed = c.s.now()
	r.afterPush(strings.TrimPrefix(refName, "refs/heads/"), c.actor().Login)
	return &commitOnBranchPayload{ClientMutationID: in.ClientMutationID, Commit: &gqlCommit{r: r, hash: h}, Ref: &gqlRef{r: r, name: refName, hash: h}}, nil
}
