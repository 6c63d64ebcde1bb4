package githubfake

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/revlist"
)

// Git smart HTTP (fetch and clone) at URL/<owner>/<repo>.git, as
// github.com serves it, with the REST API's token rules: an installation
// token (Basic auth with any user name and the token as password, as
// "x-access-token:<token>", or a bearer header) needs contents:read on a
// repository in its scope; a public repository is readable without one; a
// suspended installation is 403, an expired or revoked token 401, a
// private repository outside the token 404.
//
// Protocol: version 0/1 only. go-git's server side has no protocol v2, so
// a client asking for v2 (Git-Protocol: version=2, git's default) gets v0,
// which git accepts. Shallow fetches are served (capability "shallow":
// `fetch --depth=N`, `--unshallow`, and fetches into a shallow repository):
// go-git's packp decodes the request's want/shallow/deepen section and
// encodes the shallow/unshallow answer; which commits are shallow follows
// git's upload-pack (get_shallow_commits: the wants are at depth 1, commits
// at depth N are the new shallow boundary, the client's shallow commits
// above it are unshallowed), computed here because go-git's server has no
// shallow support. Not offered, as go-git cannot decode or produce them:
// deepen-since, deepen-not and deepen-relative (git refuses --shallow-since,
// --shallow-exclude and --deepen), partial clones (--filter: go-git's
// request decoder has no filter lines, so "filter" is not advertised and
// git warns and fetches everything), side-band progress and multi_ack.
// Advertised: every branch, tag and refs/pull/<n>/head and /merge, HEAD as
// a symref to the default branch.

// gitPath matches the smart HTTP endpoints.
var gitPath = regexp.MustCompile(`^/([^/]+)/([^/]+?)(?:\.git)?/(info/refs|git-upload-pack|git-receive-pack)$`)

// serveGit answers a smart HTTP request; false when path is not one.
// Runs with s.mu held.
func (s *Server) serveGit(w http.ResponseWriter, c *call) bool {
	m := gitPath.FindStringSubmatch(c.r.URL.Path)
	if m == nil {
		return false
	}
	c.params = map[string]string{"owner": m[1], "repo": m[2]}
	endpoint := m[3]
	service := endpoint
	if endpoint == "info/refs" {
		service = c.r.URL.Query().Get("service")
	}
	c.op = "git " + service
	entry := Request{Method: c.r.Method, Path: c.r.URL.Path, Query: c.r.URL.RawQuery, Operation: c.op}
	defer func() {
		entry.Status, entry.TokenKind = c.status, c.kind
		if c.tok != nil {
			entry.InstallationID = c.tok.inst.ID
		}
		s.requests = append(s.requests, entry)
	}()

	plain := func(status int, msg string) {
		c.status = status
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, msg+"\n")
	}
	switch {
	case service != "git-upload-pack":
		// Pushes go through the REST API (or Repo.Commit) here.
		plain(http.StatusForbidden, "githubfake serves fetch and clone only ("+service+" refused)")
		return true
	case endpoint == "info/refs" && c.r.Method != http.MethodGet,
		endpoint == "git-upload-pack" && c.r.Method != http.MethodPost:
		plain(http.StatusMethodNotAllowed, "Method Not Allowed")
		return true
	}
	if c.kind == TokenJWT {
		plain(http.StatusUnauthorized, "Invalid username or token. An app JWT cannot fetch.")
		return true
	}
	if c.kind == TokenInvalid {
		status := c.status
		if status == http.StatusForbidden {
			plain(status, "This installation has been suspended")
		} else {
			plain(http.StatusUnauthorized, "Invalid username or token. Password authentication is not supported for Git operations.")
		}
		return true
	}
	// The REST rules decide; their JSON refusal becomes git's plain text.
	probe := &call{s: s, r: c.r, params: c.params, header: http.Header{}, kind: c.kind, app: c.app, tok: c.tok}
	r := probe.repoAccess(true, need{"contents", Read})
	if r == nil {
		var e struct{ Message string }
		_ = json.Unmarshal(probe.out, &e)
		switch {
		case probe.status == http.StatusNotFound && c.kind == TokenNone:
			plain(http.StatusUnauthorized, "Repository not found.")
		case probe.status == http.StatusNotFound:
			plain(http.StatusNotFound, "Repository not found.")
		default:
			plain(probe.status, e.Message)
		}
		return true
	}
	if c.kind == TokenInstallation && levelRank(c.tok.perms["contents"]) < levelRank(Read) {
		plain(http.StatusForbidden, "Permission to "+r.FullName()+".git denied to "+c.tok.inst.App.Bot.Login+".")
		return true
	}

	if endpoint == "info/refs" {
		var buf bytes.Buffer
		if err := r.advertise(&buf); err != nil {
			plain(http.StatusInternalServerError, err.Error())
			return true
		}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		w.Header().Set("Cache-Control", "no-cache")
		c.status = http.StatusOK
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(buf.Bytes())
		return true
	}

	body := io.Reader(bytes.NewReader(c.body))
	if c.r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			plain(http.StatusBadRequest, "bad gzip body")
			return true
		}
		body = io.LimitReader(zr, maxRequestBody)
	}
	req, err := parseUploadPack(body)
	if err != nil {
		plain(http.StatusBadRequest, err.Error())
		return true
	}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
	w.Header().Set("Cache-Control", "no-cache")
	c.status = http.StatusOK
	w.WriteHeader(http.StatusOK)
	req.session = negotiationKey(c.r.Header.Get("Authorization"), r.FullName(), req)
	if err := r.uploadPack(w, req); err != nil {
		// Too late for a status: git reports the broken stream.
		_ = pktline.NewEncoder(w).Encodef("ERR %s\n", err)
	}
	return true
}

// advertise writes the smart HTTP ref advertisement.
func (r *Repo) advertise(w io.Writer) error {
	e := pktline.NewEncoder(w)
	if err := e.EncodeString("# service=git-upload-pack\n"); err != nil {
		return err
	}
	if err := e.Flush(); err != nil {
		return err
	}
	// refs/pull/<n>/head and /merge follow pushes to the heads.
	for _, in := range r.sortedIssues() {
		if in.PullRequest != nil {
			r.syncPullRef(in)
			if in.State == "open" && !in.PullRequest.Merged {
				_, _ = r.testMerge(in)
			}
		}
	}
	ar := packp.NewAdvRefs()
	for _, kv := range []struct {
		c capability.Capability
		v []string
	}{{capability.OFSDelta, nil}, {capability.Shallow, nil}, {capability.Agent, []string{"githubfake"}}} {
		if err := ar.Capabilities.Set(kv.c, kv.v...); err != nil {
			return err
		}
	}
	for _, ref := range r.refs("refs/") {
		ar.References[ref.Name().String()] = ref.Hash()
	}
	if h, ok := r.refHash("refs/heads/" + r.DefaultBranch); ok {
		ar.Head = &h
		if err := ar.Capabilities.Set(capability.SymRef, "HEAD:refs/heads/"+r.DefaultBranch); err != nil {
			return err
		}
	}
	return ar.Encode(w)
}

// infiniteDepth is what `git fetch --unshallow` sends as "deepen".
const infiniteDepth = 0x7fffffff

type uploadPackReq struct {
	packp.UploadRequest // wants, the client's shallow commits, deepen
	depth               int
	haves               []plumbing.Hash
	done                bool
	// needsOnly: the body ended after the wants section, a stateless
	// client's first round of a shallow fetch, answered with the shallow
	// list alone.
	needsOnly bool
	// session names one client's negotiation across its stateless
	// requests: its credentials, the repository and the wants section.
	session string
}

// ackedRound is what a negotiation's ACKed round had in common.
type ackedRound struct {
	common []plumbing.Hash
	at     time.Time
}

// negotiationKey names a negotiation (see uploadPack).
func negotiationKey(auth, repo string, req uploadPackReq) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%v\x00%v", auth, repo, req.depth, req.Wants, req.Shallows)
	return hex.EncodeToString(h.Sum(nil))
}

// parseUploadPack reads a v0 upload-pack request: the wants section (want
// lines, the first with capabilities, shallow and deepen lines, a flush)
// decoded by go-git, then have lines and done or a flush.
func parseUploadPack(r io.Reader) (uploadPackReq, error) {
	req := uploadPackReq{UploadRequest: *packp.NewUploadRequest()}
	if err := req.UploadRequest.Decode(r); err != nil {
		return req, fmt.Errorf("upload-pack request: %w", err)
	}
	switch d := req.Depth.(type) {
	case packp.DepthCommits:
		req.depth = int(d)
	default:
		return req, fmt.Errorf("deepen-since and deepen-not are not supported by this server")
	}
	if req.Capabilities.Supports(capability.DeepenRelative) {
		return req, fmt.Errorf("deepen-relative is not supported by this server")
	}
	// go-git has no decoder for the haves.
	sc := pktline.NewScanner(r)
	first := true
	for sc.Scan() {
		line := strings.TrimSuffix(string(sc.Bytes()), "\n")
		first = false
		if line == "" { // the flush that ends a negotiation round
			return req, nil
		}
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "have":
			oid, _, _ := strings.Cut(rest, " ")
			if !plumbing.IsHash(oid) {
				return req, fmt.Errorf("bad have line")
			}
			req.haves = append(req.haves, plumbing.NewHash(oid))
		case "done":
			req.done = true
			return req, nil
		default:
			return req, fmt.Errorf("unexpected line %q", word)
		}
	}
	if err := sc.Err(); err != nil {
		return req, err
	}
	req.needsOnly = first
	return req, nil
}

// uploadPack answers one stateless round: the shallow list when the client
// asked for a depth (on every round, as git's upload-pack does); then,
// unless the body held only the wants section of a shallow fetch, ACK the
// first common commit (or NAK) and, with done, the pack of what the wants
// reach minus what the common haves reach, both cut at the shallow
// boundary.
func (r *Repo) uploadPack(w io.Writer, req uploadPackReq) error {
	for _, h := range req.Wants {
		if !r.hasObject(plumbing.AnyObject, h) {
			return fmt.Errorf("upload-pack: not our ref %s", h)
		}
	}
	shallowFetch := req.depth > 0 || len(req.Shallows) > 0
	var upd packp.ShallowUpdate
	var clientShallow, boundary map[plumbing.Hash]bool
	if shallowFetch {
		var err error
		upd, clientShallow, boundary, err = r.shallowUpdate(req.Wants, req.Shallows, req.depth)
		if err != nil {
			return err
		}
	}
	if req.depth > 0 {
		if err := upd.Encode(w); err != nil {
			return err
		}
		if req.needsOnly {
			return nil
		}
	}
	// Without multi_ack (go-git's server has none), git's stateless client
	// ends the negotiation at the first ACK and sends "done" without haves,
	// reading no ACK or NAK before the pack. The emulator keeps what that
	// round had in common until the "done", as the one process it is.
	var common []plumbing.Hash
	for _, h := range req.haves {
		if _, err := object.GetCommit(r.st, h); err == nil {
			common = append(common, h)
		}
	}
	s := r.s
	round, afterACK := s.acked[req.session]
	// A negotiation abandoned after its ACK is forgotten soon: a later
	// fetch with the same credentials and wants is another one.
	afterACK = afterACK && time.Since(round.at) < 30*time.Second
	remembered := round.common
	if !afterACK {
		remembered = nil
	}
	if req.done {
		delete(s.acked, req.session)
	}
	e := pktline.NewEncoder(w)
	ack := func() error {
		if len(common) > 0 {
			return e.Encodef("ACK %s\n", common[0])
		}
		return e.EncodeString("NAK\n")
	}
	if !req.done {
		if len(common) > 0 {
			if s.acked == nil || len(s.acked) > 1000 {
				s.acked = map[string]ackedRound{}
			}
			s.acked[req.session] = ackedRound{common: append(remembered, common...), at: time.Now()}
		}
		return ack()
	}
	if afterACK && len(req.haves) == 0 {
		common = remembered
	} else if err := ack(); err != nil {
		return err
	}
	var objs []plumbing.Hash
	if shallowFetch {
		// The client has its haves' history only down to its shallow
		// commits; the wants' history stops at the new boundary.
		haves, err := r.reachable(common, clientShallow, nil)
		if err != nil {
			return err
		}
		have := make(map[plumbing.Hash]bool, len(haves))
		for _, h := range haves {
			have[h] = true
		}
		// As git's send_unshallow: the parents of unshallowed commits are
		// wanted too (the commits themselves the client has).
		wants := append([]plumbing.Hash(nil), req.Wants...)
		for _, h := range upd.Unshallows {
			c, err := object.GetCommit(r.st, h)
			if err != nil {
				return err
			}
			wants = append(wants, c.ParentHashes...)
		}
		if objs, err = r.reachable(wants, boundary, have); err != nil {
			return err
		}
	} else {
		have, err := revlist.Objects(r.st, common, nil)
		if err != nil {
			return err
		}
		if objs, err = revlist.Objects(r.st, req.Wants, have); err != nil {
			return err
		}
	}
	_, err := packfile.NewEncoder(w, r.st, false).Encode(objs, 10)
	return err
}

// shallowUpdate is git upload-pack's deepen() for "deepen <depth>" (0: no
// deepen line, only the client's shallow commits): the commits at depth
// (the wants at 1, parents one deeper, each commit at its shortest
// distance) become shallow unless the client has them so already; the
// client's shallow commits above depth are unshallowed (all of them for
// --unshallow). It returns the update, the client's shallow commits and
// the boundary where the wants' history stops.
func (r *Repo) shallowUpdate(wants, shallows []plumbing.Hash, depth int) (upd packp.ShallowUpdate, client, boundary map[plumbing.Hash]bool, err error) {
	client = map[plumbing.Hash]bool{}
	for _, h := range shallows {
		if _, err := object.GetCommit(r.st, h); err == nil { // unknown ones are ignored, as git does
			client[h] = true
		}
	}
	boundary = maps.Clone(client)
	switch {
	case depth == 0:
		return upd, client, boundary, nil
	case depth >= infiniteDepth:
		for _, h := range sortedHashes(client) {
			upd.Unshallows = append(upd.Unshallows, h)
			delete(boundary, h)
		}
		return upd, client, boundary, nil
	}
	dist := map[plumbing.Hash]int{}
	var queue []plumbing.Hash
	for _, h := range wants {
		c, err := r.peelCommit(h)
		if err != nil {
			continue // a want that is not a commit (a tree or blob) has no history
		}
		if _, ok := dist[c]; !ok {
			dist[c] = 1
			queue = append(queue, c)
		}
	}
	var newShallow []plumbing.Hash
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if dist[h] >= depth {
			if !client[h] {
				newShallow = append(newShallow, h)
			}
			continue
		}
		if client[h] {
			upd.Unshallows = append(upd.Unshallows, h)
			delete(boundary, h)
		}
		c, err := object.GetCommit(r.st, h)
		if err != nil {
			return upd, nil, nil, err
		}
		for _, p := range c.ParentHashes {
			if _, ok := dist[p]; !ok {
				dist[p] = dist[h] + 1
				queue = append(queue, p)
			}
		}
	}
	for _, h := range newShallow {
		boundary[h] = true
	}
	upd.Shallows = newShallow
	return upd, client, boundary, nil
}

func sortedHashes(m map[plumbing.Hash]bool) []plumbing.Hash {
	out := make([]plumbing.Hash, 0, len(m))
	for h := range m {
		out = append(out, h)
	}
	plumbing.HashesSort(out)
	return out
}

// peelCommit follows annotated tags to a commit.
func (r *Repo) peelCommit(h plumbing.Hash) (plumbing.Hash, error) {
	for range 10 {
		t, err := object.GetTag(r.st, h)
		if err != nil {
			break
		}
		h = t.Target
	}
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return c.Hash, nil
}

// reachable lists the objects starts reach (tags, commits, their trees and
// blobs; gitlinks are not objects of this repository) without descending
// into the parents of the commits in cut, leaving out those in skip and
// what only they reach.
func (r *Repo) reachable(starts []plumbing.Hash, cut map[plumbing.Hash]bool, skip map[plumbing.Hash]bool) ([]plumbing.Hash, error) {
	seen := map[plumbing.Hash]bool{}
	var out []plumbing.Hash
	add := func(h plumbing.Hash) bool {
		if seen[h] || skip[h] {
			return false
		}
		seen[h] = true
		out = append(out, h)
		return true
	}
	var walkTree func(h plumbing.Hash) error
	walkTree = func(h plumbing.Hash) error {
		if !add(h) {
			return nil
		}
		t, err := object.GetTree(r.st, h)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			switch e.Mode {
			case filemode.Submodule:
			case filemode.Dir:
				if err := walkTree(e.Hash); err != nil {
					return err
				}
			default:
				add(e.Hash)
			}
		}
		return nil
	}
	stack := append([]plumbing.Hash(nil), starts...)
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		o, err := r.st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, err
		}
		switch o.Type() {
		case plumbing.TagObject:
			t, err := object.GetTag(r.st, h)
			if err != nil {
				return nil, err
			}
			if add(h) {
				stack = append(stack, t.Target)
			}
		case plumbing.CommitObject:
			if !add(h) {
				continue
			}
			c, err := object.GetCommit(r.st, h)
			if err != nil {
				return nil, err
			}
			if err := walkTree(c.TreeHash); err != nil {
				return nil, err
			}
			if !cut[h] {
				stack = append(stack, c.ParentHashes...)
			}
		case plumbing.TreeObject:
			if err := walkTree(h); err != nil {
				return nil, err
			}
		default:
			add(h)
		}
	}
	return out, nil
}
