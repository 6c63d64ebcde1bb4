// Package gitrepo is the one hardened way Quavon reads git repositories
// (ARCHITECTURE.md, I6): the worker's bare caches fetched from GitHub, and
// `quavon scan`'s local checkout, through the same readers.
//
// Repository content is never trusted. Every git command runs with a
// configuration built here and nothing else: no system or global
// configuration (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null, an empty
// HOME), no hooks (core.hooksPath=/dev/null), no fsmonitor, no credential
// helper or terminal prompt, only the https protocol (and http where the
// caller allows it, for the emulator in tests), objects checked on transfer
// (transfer.fsckObjects), no submodules, no LFS smudge (nothing is checked
// out: bare repositories have no work tree, and files are read from objects
// with `cat-file --batch`), no attribute files of the user or the system.
//
// A read token is given per command in the environment
// (GIT_CONFIG_COUNT/KEY/VALUE for http.extraHeader): never in argv, a remote
// URL, a file or a credential helper. Remote URLs are passed on the command
// line of each fetch and never stored in the repository's configuration.
//
// Readers work at a commit: the tree listing with modes, blob ids and sizes
// (symlinks and gitlinks reported as such, never followed; non-UTF-8 names
// reported), blobs read through a long-lived cat-file process and checked
// against their id, merge bases and the changed files between two commits,
// all with caps on sizes and counts.
package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// Errors callers branch on.
var (
	ErrNotFound = errors.New("gitrepo: no such object or revision")
	ErrTooLarge = errors.New("gitrepo: over the cap")
	ErrNoGit    = errors.New("gitrepo: git is not installed")
	ErrFetch    = errors.New("gitrepo: fetch failed")
	// ErrTokenRefused (with ErrFetch): the server did not accept the token.
	ErrTokenRefused = errors.New("gitrepo: the token was refused")
	ErrNotARepo     = errors.New("gitrepo: not a git repository")
	ErrCorrupted    = errors.New("gitrepo: object does not match its id")
)

// hardening is the -c configuration of every command, before the command's
// own arguments. Values given by -c override the repository's own
// configuration too.
var hardening = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.attributesFile=/dev/null",
	"-c", "core.askPass=",
	"-c", "core.quotePath=false",
	"-c", "credential.helper=",
	"-c", "protocol.allow=never",
	"-c", "protocol.https.allow=always",
	"-c", "transfer.fsckObjects=true",
	"-c", "fetch.fsckObjects=true",
	"-c", "receive.fsckObjects=true",
	"-c", "fetch.recurseSubmodules=false",
	"-c", "submodule.recurse=false",
	"-c", "http.followRedirects=false",
	"-c", "filter.lfs.smudge=",
	"-c", "filter.lfs.process=",
	"-c", "filter.lfs.required=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "advice.detachedHead=false",
}

// runner runs git for one repository directory.
type runner struct {
	dir       string // where git discovers the repository when gitDir is ""
	gitDir    string // --git-dir
	workTree  string // for a local checkout; "" for bare
	home      string // an empty directory used as HOME
	allowHTTP bool
}

// baseEnv is the whole environment of a git command: nothing inherited but
// PATH, so no GIT_* variable, proxy or credential of the process reaches
// git.
func (r *runner) baseEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + r.home,
		"XDG_CONFIG_HOME=" + r.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_PROTOCOL_FROM_USER=0",
		"LC_ALL=C",
	}
}

func (r *runner) command(ctx context.Context, extraEnv []string, args ...string) *exec.Cmd {
	argv := append([]string(nil), hardening...)
	if r.allowHTTP {
		argv = append(argv, "-c", "protocol.http.allow=always")
	}
	if r.gitDir != "" {
		argv = append(argv, "--git-dir="+r.gitDir)
	}
	if r.workTree != "" {
		argv = append(argv, "--work-tree="+r.workTree)
	}
	argv = append(argv, args...)
	c := exec.CommandContext(ctx, "git", argv...)
	c.Env = append(r.baseEnv(), extraEnv...)
	c.Dir = r.dir
	if r.gitDir != "" {
		c.Dir = r.gitDir
	}
	// Its own process group: a cancelled context kills the whole command
	// (remote helpers included).
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	return c
}

// out runs git and returns stdout, at most max bytes (more is ErrTooLarge).
// stderr is kept for the error, capped, with the token never in it (it is
// not in argv, and git does not print extra headers).
func (r *runner) out(ctx context.Context, max int64, extraEnv []string, args ...string) ([]byte, error) {
	c := r.command(ctx, extraEnv, args...)
	var stderr bytes.Buffer
	c.Stderr = &capWriter{w: &stderr, n: 4096}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, ErrNoGit
		}
		return nil, fmt.Errorf("git %s: %w", args[0], err)
	}
	data, rerr := io.ReadAll(io.LimitReader(stdout, max+1))
	if int64(len(data)) > max {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		c.Wait()
		return nil, fmt.Errorf("git %s: output over %d bytes: %w", args[0], max, ErrTooLarge)
	}
	if err := c.Wait(); err != nil {
		return nil, &gitError{op: args[0], err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return data, rerr
}

type gitError struct {
	op     string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	if e.stderr == "" {
		return fmt.Sprintf("git %s: %v", e.op, e.err)
	}
	return fmt.Sprintf("git %s: %v: %s", e.op, e.err, e.stderr)
}

func (e *gitError) Unwrap() error { return e.err }

type capWriter struct {
	w io.Writer
	n int
}

func (l *capWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// tokenEnv passes an installation token to one command as an
// http.extraHeader (GitHub accepts Basic x-access-token:<token>), through
// GIT_CONFIG_COUNT so it is in no argv, file or URL.
func tokenEnv(token string) []string {
	if token == "" {
		return nil
	}
	return []string{
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.extraHeader",
		"GIT_CONFIG_VALUE_0=Authorization: Basic " + basicAuth("x-access-token", token),
	}
}
