package githubfake

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// RepoOptions configures AddRepo.
type RepoOptions struct {
	Private       bool
	DefaultBranch string            // "main" when empty
	Files         map[string]string // initial commit on the default branch; none = empty repository
	Fork          *Repo             // the parent when this repository is a fork
	Description   string
}

// Rule is one repository rule as GET /repos/{o}/{r}/rules/branches/{b}
// reports it: Type such as "deletion", "non_fast_forward",
// "required_linear_history", "required_signatures", "pull_request",
// "update", "creation"; Parameters as GitHub documents them.
type Rule struct {
	Type       string
	Parameters map[string]any
}

type ruleset struct {
	id      int64
	pattern string // fnmatch-style; "~DEFAULT_BRANCH" and "~ALL" as GitHub
	rules   []Rule
}

// Repo is a repository backed by an in-memory git repository.
type Repo struct {
	s             *Server
	ID            int64
	Owner         *Account
	Name          string
	Private       bool
	DefaultBranch string
	Parent        *Repo
	Deleted       bool
	Description   string
	// Archived repositories are read-only: every write is 403 "Repository
	// was archived so is read-only.", as on GitHub.
	Archived bool

	created       time.Time
	pushed        time.Time // last branch update
	st            *memory.Storage
	verified      map[plumbing.Hash]bool // commits GitHub signed
	collaborators map[string]string      // lower login -> role
	issues        map[int]*Issue
	nextNumber    int
	labels        map[string]*label
	protected     map[string]bool
	rulesets      []ruleset
	checkRuns     []*CheckRun
	reviews       map[int][]*Review // by pull request number, oldest first
	sarifs        []SARIFUpload
	closing       map[int][]issueRef
	deleted       map[int]*Issue // DeleteIssue keeps them for payloads
	prevName      string         // before the last Rename
	prevOwner     *Account       // before the last Transfer
}

type issueRef struct {
	repo   string
	number int
}

type label struct {
	id    int64
	name  string
	color string
}

// FullName is "owner/name".
func (r *Repo) FullName() string { return r.Owner.Login + "/" + r.Name }

// AddRepo creates owner/name (the owner account is created as a user if new).
func (s *Server) AddRepo(owner, name string, opt RepoOptions) *Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repos[strings.ToLower(owner+"/"+name)] != nil {
		s.tb.Fatalf("githubfake: AddRepo: %s/%s exists", owner, name)
	}
	r := &Repo{
		s:             s,
		ID:            s.newID(),
		Owner:         s.account(owner, "User"),
		Name:          name,
		Private:       opt.Private,
		DefaultBranch: opt.DefaultBranch,
		Parent:        opt.Fork,
		Description:   opt.Description,
		created:       s.now(),
		st:            memory.NewStorage(),
		verified:      map[plumbing.Hash]bool{},
		collaborators: map[string]string{},
		issues:        map[int]*Issue{},
		nextNumber:    1,
		labels:        map[string]*label{},
		protected:     map[string]bool{},
		closing:       map[int][]issueRef{},
		deleted:       map[int]*Issue{},
		reviews:       map[int][]*Review{},
	}
	if r.DefaultBranch == "" {
		r.DefaultBranch = "main"
	}
	s.repos[strings.ToLower(r.FullName())] = r
	if opt.Fork != nil {
		// A fork starts with the parent's objects and branches.
		if err := copyStorage(opt.Fork.st, r.st); err != nil {
			s.tb.Fatalf("githubfake: fork: %v", err)
		}
	}
	if len(opt.Files) > 0 {
		if _, err := r.commitFiles(r.DefaultBranch, opt.Files, "Initial commit", r.Owner); err != nil {
			s.tb.Fatalf("githubfake: AddRepo: %v", err)
		}
	}
	return r
}

// Repo returns owner/name or nil.
func (s *Server) Repo(owner, name string) *Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repos[strings.ToLower(owner+"/"+name)]
}

func (s *Server) repoByID(id int64) *Repo {
	for _, r := range s.repos {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// sortedBy returns m's values ordered by key, so that answers built from
// maps are stable.
func sortedBy[K comparable, V any, O cmp.Ordered](m map[K]V, key func(V) O) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b V) int { return cmp.Compare(key(a), key(b)) })
	return out
}

func (s *Server) sortedRepos() []*Repo {
	return sortedBy(s.repos, func(r *Repo) int64 { return r.ID })
}

func (s *Server) sortedInstallations() []*Installation {
	return sortedBy(s.installations, func(in *Installation) int64 { return in.ID })
}

// Rename renames the repository (old URLs stop resolving).
func (r *Repo) Rename(name string) {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	delete(r.s.repos, strings.ToLower(r.FullName()))
	r.prevName = r.Name
	r.rekeyInstallations(func() { r.Name = name })
	r.s.emitRepo(r, "renamed", r.Owner.Login)
}

// Transfer moves the repository to another account.
func (r *Repo) Transfer(owner string) {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	delete(r.s.repos, strings.ToLower(r.FullName()))
	r.prevOwner = r.Owner
	r.rekeyInstallations(func() { r.Owner = r.s.account(owner, "User") })
	r.s.emitRepo(r, "transferred", r.Owner.Login)
}

func (r *Repo) rekeyInstallations(change func()) {
	old := strings.ToLower(r.FullName())
	change()
	for _, in := range r.s.installations {
		for i, n := range in.Repos {
			if n == old {
				in.Repos[i] = strings.ToLower(r.FullName())
			}
		}
	}
	r.s.repos[strings.ToLower(r.FullName())] = r
}

// SetPrivate changes the visibility.
func (r *Repo) SetPrivate(private bool) {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.Private == private {
		return
	}
	r.Private = private
	action := "publicized"
	if private {
		action = "privatized"
	}
	r.s.emitRepo(r, action, r.Owner.Login)
}

// SetArchived archives or unarchives the repository.
func (r *Repo) SetArchived(archived bool) {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.Archived == archived {
		return
	}
	r.Archived = archived
	action := "unarchived"
	if archived {
		action = "archived"
	}
	r.s.emitRepo(r, action, r.Owner.Login)
}

// SetDefaultBranch changes the default branch (it need not exist).
func (r *Repo) SetDefaultBranch(branch string) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.DefaultBranch = branch
}

// Delete removes the repository.
func (r *Repo) Delete() {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.s.emitRepo(r, "deleted", r.Owner.Login)
	r.Deleted = true
	delete(r.s.repos, strings.ToLower(r.FullName()))
}

// Protect turns classic branch protection on for branch.
func (r *Repo) Protect(branch string) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.protected[branch] = true
}

// Unprotect removes classic branch protection from branch.
func (r *Repo) Unprotect(branch string) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	delete(r.protected, branch)
}

// SetRules adds a ruleset applying rules to branches matching pattern
// (fnmatch-style, "~DEFAULT_BRANCH", "~ALL"). Rules are also enforced on
// ref writes and createCommitOnBranch.
func (s *Server) SetRules(owner, repo, pattern string, rules []Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[strings.ToLower(owner+"/"+repo)]
	if r == nil {
		s.tb.Fatalf("githubfake: SetRules: no repository %s/%s", owner, repo)
	}
	r.rulesets = append(r.rulesets, ruleset{id: s.newID(), pattern: pattern, rules: rules})
}

// SetPermission sets login's role on owner/repo: admin, maintain, write,
// triage, read or none.
func (s *Server) SetPermission(owner, repo, login, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[strings.ToLower(owner+"/"+repo)]
	if r == nil {
		s.tb.Fatalf("githubfake: SetPermission: no repository %s/%s", owner, repo)
	}
	switch role {
	case "admin", "maintain", "write", "triage", "read":
		s.account(login, "User")
		r.collaborators[strings.ToLower(login)] = role
	case "none", "":
		delete(r.collaborators, strings.ToLower(login))
	default:
		s.tb.Fatalf("githubfake: SetPermission: unknown role %q", role)
	}
}

func (r *Repo) openIssues() int {
	n := 0
	for _, i := range r.issues {
		if i.State == "open" {
			n++
		}
	}
	return n
}

func (s *Server) handleGetRepo(c *call) {
	r := c.repoAccess(true, need{"metadata", Read})
	if r == nil {
		return
	}
	var perms map[string]bool
	if c.tok != nil {
		// What an installation token sees for itself.
		w := levelRank(c.tok.perms["contents"]) >= levelRank(Write)
		perms = map[string]bool{"admin": false, "maintain": false, "push": w, "triage": w, "pull": true}
	}
	c.json(http.StatusOK, s.fullRepoJSON(r, perms))
}

// handleCollaboratorPermission is GET /repos/{o}/{r}/collaborators/{u}/permission.
// permission keeps the legacy vocabulary: maintain reads as "write", triage
// as "read"; role_name has the real role.
func (s *Server) handleCollaboratorPermission(c *call) {
	r := c.repoAccess(false, need{"metadata", Read})
	if r == nil {
		return
	}
	a := s.accounts[strings.ToLower(c.param("user"))]
	if a == nil {
		c.notFound()
		return
	}
	role := r.collaborators[strings.ToLower(a.Login)]
	if strings.EqualFold(a.Login, r.Owner.Login) && a.Type == "User" {
		role = "admin"
	}
	legacy := map[string]string{"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read", "": "none"}[role]
	if role == "" && !r.Private {
		// Anyone can read a public repository.
		legacy, role = "read", "read"
	}
	roleName := role
	if roleName == "" {
		roleName = "none"
	}
	user := s.userJSON(a)
	user["permissions"] = map[string]bool{
		"admin": role == "admin", "maintain": levelOf(role) >= 4, "push": levelOf(role) >= 3,
		"triage": levelOf(role) >= 2, "pull": levelOf(role) >= 1,
	}
	user["role_name"] = roleName
	c.json(http.StatusOK, map[string]any{"permission": legacy, "role_name": roleName, "user": user})
}

func levelOf(role string) int {
	return map[string]int{"read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}[role]
}

func (s *Server) handleGetBranch(c *call) {
	r := c.repoAccess(true, need{"metadata", Read}, need{"contents", Read})
	if r == nil {
		return
	}
	b := c.param("branch")
	h, ok := r.refHash("refs/heads/" + b)
	if !ok {
		c.fail(http.StatusNotFound, "Branch not found")
		return
	}
	api := s.URL + "/repos/" + r.FullName()
	c.json(http.StatusOK, map[string]any{
		"name":      b,
		"commit":    r.restCommitJSON(h),
		"protected": r.protected[b],
		"protection": map[string]any{
			"enabled":                r.protected[b],
			"required_status_checks": map[string]any{"enforcement_level": "off", "contexts": []string{}, "checks": []any{}},
		},
		"protection_url": api + "/branches/" + b + "/protection",
		"_links":         map[string]any{"self": api + "/branches/" + b, "html": "https://github.com/" + r.FullName() + "/tree/" + b},
	})
}

func (s *Server) handleGetProtection(c *call) {
	r := c.repoAccess(false, need{"administration", Read})
	if r == nil {
		return
	}
	b := c.param("branch")
	if _, ok := r.refHash("refs/heads/" + b); !ok {
		c.fail(http.StatusNotFound, "Branch not found")
		return
	}
	if !r.protected[b] {
		c.fail(http.StatusNotFound, "Branch not protected")
		return
	}
	off := map[string]any{"enabled": false}
	url := s.URL + "/repos/" + r.FullName() + "/branches/" + b + "/protection"
	c.json(http.StatusOK, map[string]any{
		"url":                              url,
		"required_signatures":              map[string]any{"url": url + "/required_signatures", "enabled": false},
		"enforce_admins":                   map[string]any{"url": url + "/enforce_admins", "enabled": false},
		"required_linear_history":          off,
		"allow_force_pushes":               off,
		"allow_deletions":                  off,
		"block_creations":                  off,
		"required_conversation_resolution": off,
		"lock_branch":                      off,
		"allow_fork_syncing":               off,
	})
}

// rulesFor returns the rules applying to branch, each with its ruleset.
func (r *Repo) rulesFor(branch string) []map[string]any {
	out := []map[string]any{}
	for _, rs := range r.rulesets {
		if !r.patternMatches(rs.pattern, branch) {
			continue
		}
		for _, rule := range rs.rules {
			m := map[string]any{
				"type":                rule.Type,
				"ruleset_source_type": "Repository",
				"ruleset_source":      r.FullName(),
				"ruleset_id":          rs.id,
			}
			if rule.Parameters != nil {
				m["parameters"] = rule.Parameters
			}
			out = append(out, m)
		}
	}
	return out
}

func (r *Repo) hasRule(branch, typ string) bool {
	for _, m := range r.rulesFor(branch) {
		if m["type"] == typ {
			return true
		}
	}
	return false
}

func (r *Repo) patternMatches(pattern, branch string) bool {
	pattern = strings.TrimPrefix(pattern, "refs/heads/")
	switch pattern {
	case "~ALL":
		return true
	case "~DEFAULT_BRANCH":
		return branch == r.DefaultBranch
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch {
		case strings.HasPrefix(pattern[i:], "**"):
			b.WriteString(".*")
			i++
		case pattern[i] == '*':
			b.WriteString("[^/]*")
		case pattern[i] == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		}
	}
	b.WriteString("$")
	ok, _ := regexp.MatchString(b.String(), branch)
	return ok
}

func (s *Server) handleGetBranchRules(c *call) {
	r := c.repoAccess(true, need{"metadata", Read})
	if r == nil {
		return
	}
	rules := paginate(c, r.rulesFor(c.param("branch")))
	c.json(http.StatusOK, rules)
	if s.desc != nil {
		// A rule type GitHub added after the pinned description (tests
		// script "future" rules) is sent as is and left out of the check.
		known := s.desc.RuleTypes()
		described := slices.DeleteFunc(slices.Clone(rules), func(m map[string]any) bool {
			t, _ := m["type"].(string)
			return !slices.Contains(known, t)
		})
		c.checked, _ = json.Marshal(described)
	}
}

// handleGetContents serves GET contents/{path} as GitHub documents it:
// a file (base64), a directory listing, a submodule, or a symlink: one whose
// target is a file of the repository answers with that file (its path, not
// the link's), any other with the link itself.
func (s *Server) handleGetContents(c *call) {
	r := c.repoAccess(true, need{"contents", Read})
	if r == nil {
		return
	}
	ref := c.r.URL.Query().Get("ref")
	if ref == "" {
		ref = r.DefaultBranch
	}
	p := strings.Trim(c.param("path"), "/")
	commit, ok := r.resolve(ref)
	if !ok {
		c.fail(http.StatusNotFound, "No commit found for the ref "+ref)
		return
	}
	files, err := r.flatTree(commit)
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	if e, ok := files[p]; ok {
		switch e.mode {
		case filemode.Submodule:
			out := s.contentEntryJSON(r, ref, p, "submodule", e)
			out["submodule_git_url"] = "https://github.com/" + r.FullName() + "-" + pathBase(p) + ".git"
			c.json(http.StatusOK, out)
			return
		case filemode.Symlink:
			data, _ := r.blob(e.hash)
			target := path.Join(path.Dir(p), string(data))
			if t, ok := files[target]; ok && (t.mode == filemode.Regular || t.mode == filemode.Executable) && !strings.HasPrefix(target, "../") {
				p, e = target, t
				break
			}
			out := s.contentEntryJSON(r, ref, p, "symlink", e)
			out["target"] = string(data)
			c.json(http.StatusOK, out)
			return
		}
		data, err := r.blob(e.hash)
		if err != nil {
			c.notFound()
			return
		}
		out := s.contentEntryJSON(r, ref, p, "file", e)
		out["encoding"] = "base64"
		out["content"] = wrap76(base64.StdEncoding.EncodeToString(data))
		c.json(http.StatusOK, out)
		return
	}
	// Directory listing.
	list := []any{}
	seen := map[string]bool{}
	prefix := p + "/"
	if p == "" {
		prefix = ""
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		rest := name[len(prefix):]
		first, _, isDir := strings.Cut(rest, "/")
		if seen[first] {
			continue
		}
		seen[first] = true
		typ := map[filemode.FileMode]string{filemode.Submodule: "submodule", filemode.Symlink: "symlink"}[files[name].mode]
		entry := files[name]
		switch {
		case isDir:
			typ, entry = "dir", leaf{mode: filemode.Dir, hash: r.treeAt(commit, prefix+first)}
		case typ == "":
			typ = "file"
		}
		list = append(list, s.contentEntryJSON(r, ref, prefix+first, typ, entry))
	}
	if len(list) == 0 {
		c.notFound()
		return
	}
	c.json(http.StatusOK, list)
}

// contentEntryJSON is the part every contents answer shares.
func (s *Server) contentEntryJSON(r *Repo, ref, p, typ string, e leaf) map[string]any {
	self := r.api() + "/contents/" + p + "?ref=" + url.QueryEscape(ref)
	kind := "blob"
	git := r.api() + "/git/blobs/" + e.hash.String()
	switch typ {
	case "dir":
		kind, git = "tree", r.api()+"/git/trees/"+e.hash.String()
	case "submodule":
		git = r.api() + "/git/trees/" + e.hash.String()
	}
	html := htmlBase + r.FullName() + "/" + kind + "/" + ref + "/" + p
	var download any
	size := int64(0)
	if typ == "file" || typ == "symlink" {
		download = "https://raw.githubusercontent.com/" + r.FullName() + "/" + ref + "/" + p
		if o, err := r.st.EncodedObject(plumbing.BlobObject, e.hash); err == nil {
			size = o.Size()
		}
	}
	var htmlURL any = html
	if typ == "submodule" {
		htmlURL, download = nil, nil
	}
	return map[string]any{
		"type": typ, "size": size, "name": pathBase(p), "path": p, "sha": e.hash.String(),
		"url": self, "git_url": git, "html_url": htmlURL, "download_url": download,
		"_links": map[string]any{"self": self, "git": git, "html": htmlURL},
	}
}

// treeAt returns the tree hash of directory dir at commit.
func (r *Repo) treeAt(commit plumbing.Hash, dir string) plumbing.Hash {
	c, err := object.GetCommit(r.st, commit)
	if err != nil {
		return plumbing.ZeroHash
	}
	t, err := object.GetTree(r.st, c.TreeHash)
	if err != nil {
		return plumbing.ZeroHash
	}
	sub, err := t.Tree(dir)
	if err != nil {
		return plumbing.ZeroHash
	}
	return sub.Hash
}

func pathBase(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// wrap76 splits base64 into lines as GitHub's contents API does.
func wrap76(s string) string {
	var b strings.Builder
	for len(s) > 60 {
		b.WriteString(s[:60])
		b.WriteByte('\n')
		s = s[60:]
	}
	b.WriteString(s)
	b.WriteByte('\n')
	return b.String()
}
