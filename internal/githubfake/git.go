package githubfake

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
)

// leaf is a non-tree entry of a flattened tree.
type leaf struct {
	mode filemode.FileMode
	hash plumbing.Hash
}

func copyStorage(src, dst *memory.Storage) error {
	iter, err := src.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		return err
	}
	if err := iter.ForEach(func(o plumbing.EncodedObject) error {
		_, err := dst.SetEncodedObject(o)
		return err
	}); err != nil {
		return err
	}
	refs, err := src.IterReferences()
	if err != nil {
		return err
	}
	return refs.ForEach(func(r *plumbing.Reference) error { return dst.SetReference(r) })
}

func (r *Repo) refHash(name string) (plumbing.Hash, bool) {
	ref, err := r.st.Reference(plumbing.ReferenceName(name))
	if err != nil || ref.Type() != plumbing.HashReference {
		return plumbing.ZeroHash, false
	}
	return ref.Hash(), true
}

// resolve turns a branch, tag, full ref or commit SHA into a commit hash.
func (r *Repo) resolve(ref string) (plumbing.Hash, bool) {
	for _, n := range []string{ref, "refs/heads/" + ref, "refs/tags/" + ref} {
		if h, ok := r.refHash(n); ok {
			return h, true
		}
	}
	if plumbing.IsHash(ref) {
		h := plumbing.NewHash(ref)
		if _, err := object.GetCommit(r.st, h); err == nil {
			return h, true
		}
	}
	return plumbing.ZeroHash, false
}

func (r *Repo) storeBlob(data []byte) (plumbing.Hash, error) {
	o := r.st.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	w, err := o.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.st.SetEncodedObject(o)
}

func (r *Repo) blob(h plumbing.Hash) ([]byte, error) {
	b, err := object.GetBlob(r.st, h)
	if err != nil {
		return nil, err
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

func (r *Repo) hasObject(t plumbing.ObjectType, h plumbing.Hash) bool {
	_, err := r.st.EncodedObject(t, h)
	return err == nil
}

// flatTree lists the leaves of a commit's tree by full path.
func (r *Repo) flatTree(commit plumbing.Hash) (map[string]leaf, error) {
	c, err := object.GetCommit(r.st, commit)
	if err != nil {
		return nil, err
	}
	out := map[string]leaf{}
	return out, r.flatten(c.TreeHash, "", out)
}

func (r *Repo) flatten(tree plumbing.Hash, prefix string, out map[string]leaf) error {
	t, err := object.GetTree(r.st, tree)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		if e.Mode == filemode.Dir {
			if err := r.flatten(e.Hash, prefix+e.Name+"/", out); err != nil {
				return err
			}
			continue
		}
		out[prefix+e.Name] = leaf{mode: e.Mode, hash: e.Hash}
	}
	return nil
}

// buildTree writes the trees for a flat path map and returns the root.
func (r *Repo) buildTree(files map[string]leaf) (plumbing.Hash, error) {
	type dir struct {
		leaves map[string]leaf
		dirs   map[string]map[string]leaf
	}
	d := dir{leaves: map[string]leaf{}, dirs: map[string]map[string]leaf{}}
	for p, l := range files {
		first, rest, nested := strings.Cut(p, "/")
		if !nested {
			d.leaves[first] = l
			continue
		}
		if d.dirs[first] == nil {
			d.dirs[first] = map[string]leaf{}
		}
		d.dirs[first][rest] = l
	}
	var entries []object.TreeEntry
	for name, l := range d.leaves {
		entries = append(entries, object.TreeEntry{Name: name, Mode: l.mode, Hash: l.hash})
	}
	for name, sub := range d.dirs {
		h, err := r.buildTree(sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	// Git orders entries by name, with directories compared as "name/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	t := &object.Tree{Entries: entries}
	o := r.st.NewEncodedObject()
	if err := t.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.st.SetEncodedObject(o)
}

func (r *Repo) storeCommit(c *object.Commit) (plumbing.Hash, error) {
	o := r.st.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.st.SetEncodedObject(o)
}

func signature(a *Account, when time.Time) object.Signature {
	email := fmt.Sprintf("%d+%s@users.noreply.github.com", a.ID, a.Login)
	return object.Signature{Name: a.Login, Email: email, When: when}
}

// commitFiles advances branch by one commit writing files, as a push would.
func (r *Repo) commitFiles(branch string, files map[string]string, message string, author *Account) (plumbing.Hash, error) {
	flat := map[string]leaf{}
	var parents []plumbing.Hash
	head, ok := r.refHash("refs/heads/" + branch)
	if !ok {
		// A new branch starts from the default branch, as "git switch -c" would.
		head, ok = r.refHash("refs/heads/" + r.DefaultBranch)
	}
	if ok {
		var err error
		if flat, err = r.flatTree(head); err != nil {
			return plumbing.ZeroHash, err
		}
		parents = []plumbing.Hash{head}
	}
	for p, content := range files {
		h, err := r.storeBlob([]byte(content))
		if err != nil {
			return plumbing.ZeroHash, err
		}
		flat[strings.Trim(p, "/")] = leaf{mode: filemode.Regular, hash: h}
	}
	tree, err := r.buildTree(flat)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := signature(author, r.s.now())
	h, err := r.storeCommit(&object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree, ParentHashes: parents})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	r.pushed = r.s.now()
	return h, r.st.SetReference(plumbing.NewHashReference(plumbing.ReferenceName("refs/heads/"+branch), h))
}

// --- test helpers ---

// Ref returns the SHA a branch ("main") or full ref ("refs/heads/main")
// points to, or "" if it does not exist.
func (r *Repo) Ref(name string) string {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if !strings.HasPrefix(name, "refs/") {
		name = "refs/heads/" + name
	}
	h, ok := r.refHash(name)
	if !ok {
		return ""
	}
	return h.String()
}

// Branches lists the repository's branch names, sorted.
func (r *Repo) Branches() []string {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	var out []string
	for _, ref := range r.refs("refs/heads/") {
		out = append(out, strings.TrimPrefix(ref.Name().String(), "refs/heads/"))
	}
	return out
}

// ReadFile reads path at ref (branch, full ref or commit SHA).
func (r *Repo) ReadFile(ref, path string) ([]byte, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	h, ok := r.resolve(ref)
	if !ok {
		return nil, fmt.Errorf("githubfake: ReadFile %s: unknown ref", ref)
	}
	files, err := r.flatTree(h)
	if err != nil {
		return nil, err
	}
	l, ok := files[strings.Trim(path, "/")]
	if !ok {
		return nil, fmt.Errorf("githubfake: ReadFile %s:%s: %w", ref, path, errNoFile)
	}
	return r.blob(l.hash)
}

var errNoFile = errors.New("no such file")

// Files returns every file at ref with its content.
func (r *Repo) Files(ref string) (map[string]string, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	h, ok := r.resolve(ref)
	if !ok {
		return nil, fmt.Errorf("githubfake: Files %s: unknown ref", ref)
	}
	files, err := r.flatTree(h)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for p, l := range files {
		b, err := r.blob(l.hash)
		if err != nil {
			return nil, err
		}
		out[p] = string(b)
	}
	return out, nil
}

// Commit advances branch with one commit writing files, as a human push
// would (unsigned, authored by the repository owner); a new branch starts
// from the default branch. It returns the new SHA.
func (r *Repo) Commit(branch string, files map[string]string, message string) string {
	defer r.s.flush()
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	h, err := r.commitFiles(branch, files, message, r.Owner)
	if err != nil {
		r.s.tb.Fatalf("githubfake: Commit: %v", err)
	}
	r.afterPush(branch, r.Owner.Login)
	return h.String()
}

// CommitInfo describes a commit for assertions.
type CommitInfo struct {
	SHA      string
	Tree     string
	Parents  []string
	Message  string
	Author   string // name
	Verified bool   // GitHub signed it (API commit by an app)
}

// CommitInfo returns the commit sha, if it exists.
func (r *Repo) CommitInfo(sha string) (CommitInfo, bool) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if !plumbing.IsHash(sha) {
		return CommitInfo{}, false
	}
	c, err := object.GetCommit(r.st, plumbing.NewHash(sha))
	if err != nil {
		return CommitInfo{}, false
	}
	info := CommitInfo{SHA: sha, Tree: c.TreeHash.String(), Message: c.Message, Author: c.Author.Name, Verified: r.verified[c.Hash]}
	for _, p := range c.ParentHashes {
		info.Parents = append(info.Parents, p.String())
	}
	return info, true
}

// --- JSON ---

func (r *Repo) api() string { return r.s.URL + "/repos/" + r.FullName() }

func sigJSON(s object.Signature) map[string]any {
	return map[string]any{"name": s.Name, "email": s.Email, "date": s.When.UTC().Format(time.RFC3339)}
}

func (r *Repo) commitJSON(h plumbing.Hash) map[string]any {
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return nil
	}
	parents := []any{}
	for _, p := range c.ParentHashes {
		parents = append(parents, map[string]any{"sha": p.String(), "url": r.api() + "/git/commits/" + p.String(), "html_url": "https://github.com/" + r.FullName() + "/commit/" + p.String()})
	}
	ver := map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil}
	if r.verified[h] {
		ver = map[string]any{
			"verified": true, "reason": "valid",
			"signature": "-----BEGIN PGP SIGNATURE-----\n\nwsBcBAABCAAQBQJfakeFAKE\n-----END PGP SIGNATURE-----\n",
			"payload":   "tree " + c.TreeHash.String() + "\n", "verified_at": c.Committer.When.UTC().Format(time.RFC3339),
		}
	}
	return map[string]any{
		"sha":          h.String(),
		"node_id":      "C_" + h.String()[:20],
		"url":          r.api() + "/git/commits/" + h.String(),
		"html_url":     "https://github.com/" + r.FullName() + "/commit/" + h.String(),
		"author":       sigJSON(c.Author),
		"committer":    sigJSON(c.Committer),
		"tree":         map[string]any{"sha": c.TreeHash.String(), "url": r.api() + "/git/trees/" + c.TreeHash.String()},
		"message":      c.Message,
		"parents":      parents,
		"verification": ver,
	}
}

func (r *Repo) refJSON(name string, h plumbing.Hash) map[string]any {
	return map[string]any{
		"ref":     name,
		"node_id": "REF_" + base64.RawURLEncoding.EncodeToString([]byte(name)),
		"url":     r.api() + "/git/" + name,
		"object":  map[string]any{"type": "commit", "sha": h.String(), "url": r.api() + "/git/commits/" + h.String()},
	}
}

func (r *Repo) treeJSON(h plumbing.Hash, recursive bool) (map[string]any, error) {
	entries := []any{}
	var walk func(tree plumbing.Hash, prefix string) error
	walk = func(tree plumbing.Hash, prefix string) error {
		t, err := object.GetTree(r.st, tree)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			m := map[string]any{"path": prefix + e.Name, "mode": fmt.Sprintf("%06o", uint32(e.Mode)), "sha": e.Hash.String()}
			switch e.Mode {
			case filemode.Dir:
				m["type"] = "tree"
				m["url"] = r.api() + "/git/trees/" + e.Hash.String()
			case filemode.Submodule:
				m["type"] = "commit"
			default:
				m["type"] = "blob"
				if o, err := r.st.EncodedObject(plumbing.BlobObject, e.Hash); err == nil {
					m["size"] = o.Size()
				}
				m["url"] = r.api() + "/git/blobs/" + e.Hash.String()
			}
			entries = append(entries, m)
			if recursive && e.Mode == filemode.Dir {
				if err := walk(e.Hash, prefix+e.Name+"/"); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(h, ""); err != nil {
		return nil, err
	}
	return map[string]any{"sha": h.String(), "url": r.api() + "/git/trees/" + h.String(), "tree": entries, "truncated": false}, nil
}

// --- handlers ---

func (s *Server) handleCreateBlob(c *call) {
	r := c.repoAccess(false, need{"contents", Write})
	if r == nil {
		return
	}
	var req struct {
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	if !c.decode(&req) {
		return
	}
	if req.Content == nil {
		c.validationFailed("Invalid request.\n\n\"content\" wasn't supplied.")
		return
	}
	var data []byte
	switch req.Encoding {
	case "", "utf-8":
		data = []byte(*req.Content)
	case "base64":
		var err error
		data, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(*req.Content), ""))
		if err != nil {
			c.validationFailed("Invalid Base64 content")
			return
		}
	default:
		c.validationFailed(fmt.Sprintf("encoding must be one of utf-8, base64 (got %q)", req.Encoding))
		return
	}
	h, err := r.storeBlob(data)
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	c.header.Set("Location", r.api()+"/git/blobs/"+h.String())
	c.json(http.StatusCreated, map[string]any{"sha": h.String(), "url": r.api() + "/git/blobs/" + h.String()})
}

func (s *Server) handleGetBlob(c *call) {
	r := c.repoAccess(true, need{"contents", Read})
	if r == nil {
		return
	}
	sha := c.param("sha")
	if !plumbing.IsHash(sha) {
		c.notFound()
		return
	}
	data, err := r.blob(plumbing.NewHash(sha))
	if err != nil {
		c.notFound()
		return
	}
	c.json(http.StatusOK, map[string]any{
		"sha": sha, "node_id": "B_" + sha[:20], "size": len(data), "url": r.api() + "/git/blobs/" + sha,
		"content": wrap76(base64.StdEncoding.EncodeToString(data)), "encoding": "base64",
	})
}

type treeEntryReq struct {
	Path    string          `json:"path"`
	Mode    string          `json:"mode"`
	Type    string          `json:"type"`
	SHA     json.RawMessage `json:"sha"`
	Content *string         `json:"content"`
}

func (s *Server) handleCreateTree(c *call) {
	r := c.repoAccess(false, need{"contents", Write})
	if r == nil {
		return
	}
	var req struct {
		BaseTree string         `json:"base_tree"`
		Tree     []treeEntryReq `json:"tree"`
	}
	if !c.decode(&req) {
		return
	}
	if req.Tree == nil {
		c.validationFailed("Invalid request.\n\n\"tree\" wasn't supplied.")
		return
	}
	flat := map[string]leaf{}
	if req.BaseTree != "" {
		if !plumbing.IsHash(req.BaseTree) || !r.hasObject(plumbing.TreeObject, plumbing.NewHash(req.BaseTree)) {
			c.validationFailed("base_tree is not a valid tree oid")
			return
		}
		if err := r.flatten(plumbing.NewHash(req.BaseTree), "", flat); err != nil {
			c.fail(http.StatusInternalServerError, err.Error())
			return
		}
	}
	for _, e := range req.Tree {
		p := e.Path
		if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") {
			c.validationFailed("tree.path contains a malformed path component")
			return
		}
		for _, part := range strings.Split(p, "/") {
			if part == "." || part == ".." || part == ".git" {
				c.validationFailed("tree.path contains a malformed path component")
				return
			}
		}
		mode, err := filemode.New(e.Mode)
		if err != nil || (mode != filemode.Regular && mode != filemode.Executable && mode != filemode.Dir && mode != filemode.Symlink && mode != filemode.Submodule) {
			c.validationFailed("Invalid tree info", map[string]any{"resource": "Tree", "field": "mode", "code": "invalid"})
			return
		}
		wantType := map[filemode.FileMode]string{filemode.Dir: "tree", filemode.Submodule: "commit"}[mode]
		if wantType == "" {
			wantType = "blob"
		}
		if e.Type != "" && e.Type != wantType {
			c.validationFailed("Invalid tree info", map[string]any{"resource": "Tree", "field": "type", "code": "invalid"})
			return
		}
		shaNull := string(bytes.TrimSpace(e.SHA)) == "null"
		var sha string
		if len(e.SHA) > 0 && !shaNull {
			if err := json.Unmarshal(e.SHA, &sha); err != nil {
				c.fail(http.StatusBadRequest, "Problems parsing JSON")
				return
			}
		}
		if sha != "" && e.Content != nil {
			c.validationFailed("Must supply either tree.sha or tree.content. Request will be rejected if both are present.")
			return
		}
		switch {
		case shaNull:
			// Deletes the path (a file or a whole directory).
			delete(flat, p)
			for k := range flat {
				if strings.HasPrefix(k, p+"/") {
					delete(flat, k)
				}
			}
		case e.Content != nil:
			if mode == filemode.Dir || mode == filemode.Submodule {
				c.validationFailed("Invalid tree info")
				return
			}
			h, err := r.storeBlob([]byte(*e.Content))
			if err != nil {
				c.fail(http.StatusInternalServerError, err.Error())
				return
			}
			removeUnder(flat, p)
			flat[p] = leaf{mode: mode, hash: h}
		case sha != "":
			if !plumbing.IsHash(sha) {
				c.validationFailed("tree.sha " + sha + " is not a valid sha")
				return
			}
			h := plumbing.NewHash(sha)
			switch mode {
			case filemode.Dir:
				sub := map[string]leaf{}
				if !r.hasObject(plumbing.TreeObject, h) || r.flatten(h, "", sub) != nil {
					c.validationFailed("tree.sha " + sha + " is not a valid tree")
					return
				}
				removeUnder(flat, p)
				delete(flat, p)
				for k, v := range sub {
					flat[p+"/"+k] = v
				}
			case filemode.Submodule:
				removeUnder(flat, p)
				flat[p] = leaf{mode: mode, hash: h}
			default:
				if !r.hasObject(plumbing.BlobObject, h) {
					c.validationFailed("tree.sha " + sha + " is not a valid blob")
					return
				}
				removeUnder(flat, p)
				flat[p] = leaf{mode: mode, hash: h}
			}
		default:
			c.validationFailed("Must supply either tree.sha or tree.content. Request will be rejected if both are present.")
			return
		}
	}
	h, err := r.buildTree(flat)
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	out, err := r.treeJSON(h, true)
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	c.header.Set("Location", r.api()+"/git/trees/"+h.String())
	c.json(http.StatusCreated, out)
}

// removeUnder drops entries below p and any file that is a prefix of p, so a
// path cannot be both a file and a directory.
func removeUnder(flat map[string]leaf, p string) {
	for k := range flat {
		if strings.HasPrefix(k, p+"/") || strings.HasPrefix(p, k+"/") {
			delete(flat, k)
		}
	}
}

func (s *Server) handleGetTree(c *call) {
	r := c.repoAccess(true, need{"contents", Read})
	if r == nil {
		return
	}
	ref := c.param("sha")
	var h plumbing.Hash
	switch {
	case plumbing.IsHash(ref) && r.hasObject(plumbing.TreeObject, plumbing.NewHash(ref)):
		h = plumbing.NewHash(ref)
	default:
		ch, ok := r.resolve(ref)
		if !ok {
			c.notFound()
			return
		}
		cm, err := object.GetCommit(r.st, ch)
		if err != nil {
			c.notFound()
			return
		}
		h = cm.TreeHash
	}
	rec := c.r.URL.Query().Get("recursive")
	out, err := r.treeJSON(h, rec != "" && rec != "0" && rec != "false")
	if err != nil {
		c.notFound()
		return
	}
	c.json(http.StatusOK, out)
}

type sigReq struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

func (s *Server) handleCreateCommit(c *call) {
	r := c.repoAccess(false, need{"contents", Write})
	if r == nil {
		return
	}
	var req struct {
		Message   *string  `json:"message"`
		Tree      string   `json:"tree"`
		Parents   []string `json:"parents"`
		Author    *sigReq  `json:"author"`
		Committer *sigReq  `json:"committer"`
		Signature string   `json:"signature"`
	}
	if !c.decode(&req) {
		return
	}
	if req.Message == nil {
		c.validationFailed("Invalid request.\n\n\"message\" wasn't supplied.")
		return
	}
	if !plumbing.IsHash(req.Tree) || !r.hasObject(plumbing.TreeObject, plumbing.NewHash(req.Tree)) {
		c.validationFailed("Tree SHA does not exist")
		return
	}
	var parents []plumbing.Hash
	for _, p := range req.Parents {
		if !plumbing.IsHash(p) || !r.hasObject(plumbing.CommitObject, plumbing.NewHash(p)) {
			c.validationFailed("Parent SHA does not exist or is not a commit object")
			return
		}
		parents = append(parents, plumbing.NewHash(p))
	}
	now := s.now()
	bot := c.actor()
	def := signature(bot, now)
	author, committer := def, def
	toSig := func(in *sigReq, fallback object.Signature) (object.Signature, bool) {
		if in == nil {
			return fallback, true
		}
		if in.Name == "" || in.Email == "" {
			return object.Signature{}, false
		}
		when := now
		if in.Date != "" {
			t, err := time.Parse(time.RFC3339, in.Date)
			if err != nil {
				return object.Signature{}, false
			}
			when = t
		}
		return object.Signature{Name: in.Name, Email: in.Email, When: when}, true
	}
	var ok bool
	if author, ok = toSig(req.Author, def); !ok {
		c.validationFailed("Invalid request.\n\nFor 'properties/author', invalid signature.")
		return
	}
	if committer, ok = toSig(req.Committer, author); !ok {
		c.validationFailed("Invalid request.\n\nFor 'properties/committer', invalid signature.")
		return
	}
	h, err := r.storeCommit(&object.Commit{Author: author, Committer: committer, Message: *req.Message, TreeHash: plumbing.NewHash(req.Tree), ParentHashes: parents})
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	// GitHub signs commits an app creates through the API when it does not
	// set the author or committer itself.
	if req.Author == nil && req.Committer == nil && req.Signature == "" {
		r.verified[h] = true
	}
	c.header.Set("Location", r.api()+"/git/commits/"+h.String())
	c.json(http.StatusCreated, r.commitJSON(h))
}

func (s *Server) handleGetCommit(c *call) {
	r := c.repoAccess(true, need{"contents", Read})
	if r == nil {
		return
	}
	sha := c.param("sha")
	if !plumbing.IsHash(sha) || !r.hasObject(plumbing.CommitObject, plumbing.NewHash(sha)) {
		c.notFound()
		return
	}
	c.json(http.StatusOK, r.commitJSON(plumbing.NewHash(sha)))
}

func (r *Repo) refs(prefix string) []*plumbing.Reference {
	var out []*plumbing.Reference
	iter, err := r.st.IterReferences()
	if err != nil {
		return nil
	}
	_ = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference && strings.HasPrefix(ref.Name().String(), prefix) {
			out = append(out, ref)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// handleGetRef is GET git/ref/{ref}: exactly one ref.
func (s *Server) handleGetRef(c *call) {
	r := c.repoAccess(true, need{"contents", Read})
	if r == nil {
		return
	}
	name := "refs/" + strings.TrimPrefix(c.param("ref"), "refs/")
	h, ok := r.refHash(name)
	if !ok {
		c.notFound()
		return
	}
	c.json(http.StatusOK, r.refJSON(name, h))
}

// handleListRefs is GET git/matching-refs/{ref}: the refs starting with
// refs/{ref}, always a list (empty when none match). The legacy GET
// git/refs[/{ref}] is not in GitHub's description and not served.
func (s *Server) handleListRefs(c *call) {
	r := c.repoAccess(true, need{"contents", Read})
	if r == nil {
		return
	}
	name := "refs/"
	if p := c.param("ref"); p != "" {
		name = "refs/" + strings.TrimPrefix(p, "refs/")
	}
	list := []any{}
	for _, ref := range r.refs(name) {
		list = append(list, r.refJSON(ref.Name().String(), ref.Hash()))
	}
	c.json(http.StatusOK, list)
}

// checkWorkflows is GitHub's refusal of a ref write by an app without
// workflows: write that adds, changes or removes a file under
// .github/workflows/ relative to from (the ref's old target; for a new
// ref, the commit's first parent).
func (r *Repo) checkWorkflows(c *call, from, to plumbing.Hash) string {
	if c.tok == nil || levelRank(c.tok.perms["workflows"]) >= levelRank(Write) {
		return ""
	}
	if from.IsZero() {
		if cm, err := object.GetCommit(r.st, to); err == nil && len(cm.ParentHashes) > 0 {
			from = cm.ParentHashes[0]
		}
	}
	after, err := r.flatTree(to)
	if err != nil {
		return ""
	}
	before := map[string]leaf{}
	if !from.IsZero() {
		if before, err = r.flatTree(from); err != nil {
			return ""
		}
	}
	var changed []string
	for p, l := range after {
		if strings.HasPrefix(p, ".github/workflows/") && before[p] != l {
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok && strings.HasPrefix(p, ".github/workflows/") {
			changed = append(changed, p)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	sort.Strings(changed)
	return "refusing to allow a GitHub App to create or update workflow `" + changed[0] + "` without `workflows` permission"
}

// checkRefWrite applies classic protection and rulesets to a branch write.
// op is "create", "update", "delete"; force marks a non-fast-forward.
func (r *Repo) checkRefWrite(name, op string, force bool, target plumbing.Hash) string {
	branch, isBranch := strings.CutPrefix(name, "refs/heads/")
	if !isBranch {
		return ""
	}
	if r.protected[branch] && op != "create" {
		return "Protected branch update failed for " + name + "."
	}
	var violations []string
	has := func(t string) bool { return r.hasRule(branch, t) }
	switch op {
	case "create":
		if has("creation") {
			violations = append(violations, "Cannot create ref due to creations being restricted.")
		}
	case "update":
		if has("update") {
			violations = append(violations, "Cannot update this protected ref.")
		}
		if force && has("non_fast_forward") {
			violations = append(violations, "Cannot force-push to this branch")
		}
		if has("pull_request") {
			violations = append(violations, "Changes must be made through a pull request.")
		}
	case "delete":
		if has("deletion") {
			violations = append(violations, "Cannot delete this branch")
		}
	}
	if op != "delete" {
		if has("required_signatures") && !r.verified[target] {
			violations = append(violations, "Commits must have verified signatures.")
		}
		if has("required_linear_history") {
			if cm, err := object.GetCommit(r.st, target); err == nil && len(cm.ParentHashes) > 1 {
				violations = append(violations, "This branch must not contain merge commits.")
			}
		}
	}
	if len(violations) == 0 {
		return ""
	}
	return "Repository rule violations found\n\n" + strings.Join(violations, "\n\n") + "\n\n"
}

func validRefName(name string) bool {
	if !strings.HasPrefix(name, "refs/") || strings.Count(name, "/") < 2 {
		return false
	}
	if strings.Contains(name, "..") || strings.ContainsAny(name, " ~^:?*[\\") || strings.HasSuffix(name, "/") ||
		strings.HasSuffix(name, ".lock") || strings.Contains(name, "//") || strings.Contains(name, "@{") || !utf8.ValidString(name) {
		return false
	}
	return true
}

func (s *Server) handleCreateRef(c *call) {
	r := c.repoAccess(false, need{"contents", Write})
	if r == nil {
		return
	}
	var req struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if !c.decode(&req) {
		return
	}
	if !validRefName(req.Ref) {
		c.validationFailed("Reference name must start with 'refs/' and have at least two slashes.")
		return
	}
	if !plumbing.IsHash(req.SHA) || !r.hasObject(plumbing.AnyObject, plumbing.NewHash(req.SHA)) {
		c.validationFailed("Object does not exist")
		return
	}
	h := plumbing.NewHash(req.SHA)
	if _, exists := r.refHash(req.Ref); exists {
		c.validationFailed("Reference already exists")
		return
	}
	if msg := r.checkRefWrite(req.Ref, "create", false, h); msg != "" {
		c.validationFailed(msg)
		return
	}
	if msg := r.checkWorkflows(c, plumbing.ZeroHash, h); msg != "" {
		c.validationFailed(msg)
		return
	}
	if err := r.st.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(req.Ref), h)); err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	c.header.Set("Location", r.api()+"/git/"+req.Ref)
	c.json(http.StatusCreated, r.refJSON(req.Ref, h))
}

func (s *Server) handleUpdateRef(c *call) {
	r := c.repoAccess(false, need{"contents", Write})
	if r == nil {
		return
	}
	var req struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if !c.decode(&req) {
		return
	}
	name := "refs/" + strings.TrimPrefix(c.param("ref"), "refs/")
	old, ok := r.refHash(name)
	if !ok {
		c.validationFailed("Reference does not exist")
		return
	}
	if !plumbing.IsHash(req.SHA) || !r.hasObject(plumbing.CommitObject, plumbing.NewHash(req.SHA)) {
		c.validationFailed("Object does not exist")
		return
	}
	h := plumbing.NewHash(req.SHA)
	ff := old == h
	if !ff {
		oc, err1 := object.GetCommit(r.st, old)
		nc, err2 := object.GetCommit(r.st, h)
		if err1 == nil && err2 == nil {
			ff, _ = oc.IsAncestor(nc)
		}
	}
	if !ff && !req.Force {
		c.validationFailed("Update is not a fast forward")
		return
	}
	if msg := r.checkRefWrite(name, "update", !ff, h); msg != "" {
		c.validationFailed(msg)
		return
	}
	if msg := r.checkWorkflows(c, old, h); msg != "" {
		c.validationFailed(msg)
		return
	}
	if err := r.st.CheckAndSetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), h), plumbing.NewHashReference(plumbing.ReferenceName(name), old)); err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	r.pushed = s.now()
	if branch, ok := strings.CutPrefix(name, "refs/heads/"); ok {
		r.afterPush(branch, c.actor().Login)
	}
	c.json(http.StatusOK, r.refJSON(name, h))
}

func (s *Server) handleDeleteRef(c *call) {
	r := c.repoAccess(false, need{"contents", Write})
	if r == nil {
		return
	}
	name := "refs/" + strings.TrimPrefix(c.param("ref"), "refs/")
	if _, ok := r.refHash(name); !ok {
		c.validationFailed("Reference does not exist")
		return
	}
	if msg := r.checkRefWrite(name, "delete", false, plumbing.ZeroHash); msg != "" {
		c.validationFailed(msg)
		return
	}
	if err := r.st.RemoveReference(plumbing.ReferenceName(name)); err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	c.status = http.StatusNoContent
}

var _ storer.ReferenceStorer = (*memory.Storage)(nil)

// commitParam resolves {ref} (branch, tag, full ref or SHA) to a commit, or
// answers 422 "No commit found for SHA" as GitHub does.
func (c *call) commitParam(r *Repo) (plumbing.Hash, bool) {
	h, ok := r.resolve(c.param("ref"))
	if !ok {
		c.validationFailed("No commit found for SHA: " + c.param("ref"))
	}
	return h, ok
}

// handleGetRepoCommit is GET /repos/{o}/{r}/commits/{ref}: the REST commit
// with the git commit nested under "commit".
func (s *Server) handleGetRepoCommit(c *call) {
	r := c.repoAccess(true, need{"contents", Read})
	if r == nil {
		return
	}
	h, ok := c.commitParam(r)
	if !ok {
		return
	}
	c.json(http.StatusOK, r.restCommitJSON(h))
}

// restCommitJSON is GitHub's commit (the REST commits and branches API):
// author and committer are the GitHub accounts of the commit's emails, or
// null when no account has that email (as on GitHub).
func (r *Repo) restCommitJSON(h plumbing.Hash) map[string]any {
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return nil
	}
	gc := r.commitJSON(h)
	api := r.api() + "/commits/" + h.String()
	inner := map[string]any{
		"url": r.api() + "/git/commits/" + h.String(), "author": gc["author"], "committer": gc["committer"],
		"message": c.Message, "comment_count": 0, "tree": gc["tree"], "verification": gc["verification"],
	}
	return map[string]any{
		"sha": h.String(), "node_id": gc["node_id"], "url": api, "html_url": gc["html_url"],
		"comments_url": api + "/comments", "commit": inner,
		"author": r.s.userJSON(r.s.accountByEmail(c.Author.Email)), "committer": r.s.userJSON(r.s.accountByEmail(c.Committer.Email)),
		"parents": gc["parents"],
	}
}

// accountByEmail finds the account of a noreply address the emulator
// writes into commits ("<id>+<login>@users.noreply.github.com").
func (s *Server) accountByEmail(email string) *Account {
	local, ok := strings.CutSuffix(email, "@users.noreply.github.com")
	if !ok {
		return nil
	}
	_, login, _ := strings.Cut(local, "+")
	return s.accounts[strings.ToLower(login)]
}
