package githubfake

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
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
// which git accepts. Not offered, as go-git cannot produce them: shallow
// fetches (--depth: git refuses "Server does not support shallow
// clients"), partial clones (--filter: git warns and fetches everything),
// side-band progress and multi_ack. Advertised: every branch, tag and
// refs/pull/<n>/head and /merge, HEAD as a symref to the default branch.

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
	}{{capability.OFSDelta, nil}, {capability.Agent, []string{"githubfake"}}} {
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

type uploadPackReq struct {
	wants, haves []plumbing.Hash
	done         bool
}

// parseUploadPack reads a v0 upload-pack request: want lines (the first
// with capabilities), a flush, have lines, and done or a flush.
func parseUploadPack(r io.Reader) (uploadPackReq, error) {
	var req uploadPackReq
	sc := pktline.NewScanner(r)
	flushes := 0
	for sc.Scan() {
		line := strings.TrimSuffix(string(sc.Bytes()), "\n")
		if line == "" {
			flushes++
			if flushes == 2 {
				break
			}
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "want", "have":
			oid, _, _ := strings.Cut(rest, " ")
			if !plumbing.IsHash(oid) {
				return req, fmt.Errorf("bad %s line", word)
			}
			if word == "want" {
				req.wants = append(req.wants, plumbing.NewHash(oid))
			} else {
				req.haves = append(req.haves, plumbing.NewHash(oid))
			}
		case "done":
			req.done = true
			return req, nil
		case "shallow", "deepen", "deepen-since", "deepen-not", "filter":
			return req, fmt.Errorf("%s is not supported by this server", word)
		default:
			return req, fmt.Errorf("unexpected line %q", word)
		}
	}
	if err := sc.Err(); err != nil {
		return req, err
	}
	if len(req.wants) == 0 {
		return req, fmt.Errorf("no want lines")
	}
	return req, nil
}

// uploadPack answers one stateless round: without done, ACK the first
// common commit (or NAK) and stop; with done, send the pack of what the
// wants reach minus what the common haves reach.
func (r *Repo) uploadPack(w io.Writer, req uploadPackReq) error {
	for _, h := range req.wants {
		if !r.hasObject(plumbing.AnyObject, h) {
			return fmt.Errorf("upload-pack: not our ref %s", h)
		}
	}
	var common []plumbing.Hash
	for _, h := range req.haves {
		if _, err := object.GetCommit(r.st, h); err == nil {
			common = append(common, h)
		}
	}
	e := pktline.NewEncoder(w)
	ack := func() error {
		if len(common) > 0 {
			return e.Encodef("ACK %s\n", common[0])
		}
		return e.EncodeString("NAK\n")
	}
	if !req.done {
		return ack()
	}
	if err := ack(); err != nil {
		return err
	}
	have, err := revlist.Objects(r.st, common, nil)
	if err != nil {
		return err
	}
	objs, err := revlist.Objects(r.st, req.wants, have)
	if err != nil {
		return err
	}
	_, err = packfile.NewEncoder(w, r.st, false).Encode(objs, 10)
	return err
}
