package sast

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/quavon/quavon/internal/sast/gocache"
)

// ToolGosec is gosec, driving the image's Go toolchain offline. The
// driver runs gosec's analysis through quavon-gosec (./cmd/quavon-gosec,
// gosec's library with one package load per module instead of the gosec
// command's one per package); the image keeps the gosec command too, for
// its version and for checking the two agree.
const ToolGosec Tool = "gosec"

var gosec = &Scanner{
	Tool:       ToolGosec,
	Extensions: []string{".go"},
	InfoURI:    "https://github.com/securego/gosec",
	Programs:   []string{"quavon-gosec", "go"},
	// gosec type-checks whole packages: the slowest tool.
	Cost:    12,
	Invoke:  invokeGosec,
	parse:   parseGosec,
	compact: compactGosec,
}

// goEnv pins the Go command to the image's toolchain and module cache:
// nothing from the network, the repository's go.work or a go.env.
func goEnv(w *Workspace) []string {
	return w.Env("GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GONOSUMCHECK=1",
		"GOWORK=off", "GOENV=off", "GOTELEMETRY=off", "CGO_ENABLED=0",
		"GOCACHE="+filepath.Join(w.Home, "go-build"), "GOMODCACHE="+filepath.Join(w.Home, "gomod"),
		"GOPATH="+filepath.Join(w.Home, "go"), "GOTMPDIR="+filepath.Join(w.Home, "tmp"))
}

// invokeGosec runs gosec -tests (quavon-gosec) once per Go module that
// holds a changed file, on the changed files' packages, and merges the
// reports into one.
// Beside its load, quavon-gosec says which files of those packages Go
// builds here (linux, CGO_ENABLED=0: go/build's reading of each directory,
// the one gosec's load starts from): a changed file outside the build
// (build constraints, a leading "_" or ".", cgo), one it cannot read, or
// one in a package it cannot load is not scanned by gosec and is
// reported, as is one whose path the snapshot's source tree cannot hold.
func invokeGosec(w *Workspace, files []Target) (*Invocation, error) {
	bin, err := w.LookPath("quavon-gosec")
	if err != nil {
		return nil, err
	}
	if _, err := w.LookPath("go"); err != nil {
		return nil, err
	}
	inv := &Invocation{Files: len(files)}
	// module root → package directories (relative to the root)
	mods := map[string][]string{}
	var order []string
	var laidOut []Target
	for _, f := range files {
		if f.Src == "" {
			inv.NotCovered = append(inv.NotCovered, FileNote{f.Index,
				"gosec: its path cannot be laid out for the Go toolchain (control characters, a backslash or a .git segment)"})
			continue
		}
		laidOut = append(laidOut, f)
		dir := path.Dir(f.Src)
		mod := moduleRoot(w.Src, dir)
		pkg := "."
		if dir != mod {
			pkg = "./" + strings.TrimPrefix(dir, mod+"/")
			if mod == "." {
				pkg = "./" + dir
			}
		}
		if _, ok := mods[mod]; !ok {
			order = append(order, mod)
		}
		if !slices.Contains(mods[mod], pkg) {
			mods[mod] = append(mods[mod], pkg)
		}
	}
	out := w.OutPath(ToolGosec)
	if len(order) == 0 {
		return inv, os.WriteFile(out, []byte(`{"Golang errors":{},"Issues":[]}`), 0o644)
	}
	// The go command's index of the standard library's packages, from the
	// image's prebuilt cache: without it go list reads every standard
	// package it meets from source (58,000 system calls instead of 35,000
	// for net/http's closure). The standard library's export data is
	// seeded by quavon-gosec if it has to compile (-gocache-seed); an image
	// without the manifest gets everything now, as before.
	seed, cache := filepath.Join(w.Opt, "gocache"), filepath.Join(w.Home, "go-build")
	listed, err := gocache.SeedListed(seed, cache, filepath.Join(w.Opt, gocache.ListManifest))
	if err == nil && !listed {
		err = gocache.Seed(seed, cache)
	}
	if err != nil {
		return nil, fmt.Errorf("go build cache: %w", err)
	}
	// The image's map of the standard library's export data: with it
	// quavon-gosec compiles none of the changed packages.
	stdExport := filepath.Join(w.Opt, "gocache-std.txt")
	if _, err := os.Stat(stdExport); err != nil {
		stdExport = ""
	}
	var parts, lists []string
	for i, mod := range order {
		part := filepath.Join(w.Home, fmt.Sprintf("gosec-%d.json", i))
		list := filepath.Join(w.Home, fmt.Sprintf("gofiles-%d.json", i))
		parts, lists = append(parts, part), append(lists, list)
		dir := filepath.Join(w.Src, filepath.FromSlash(mod))
		argv := []string{bin, "-tests", "-files", list, "-out", part}
		if listed {
			argv = append(argv, "-gocache-seed", seed)
		}
		if stdExport != "" {
			argv = append(argv, "-std-export", stdExport)
		}
		inv.Cmds = append(inv.Cmds,
			Command{Argv: append(append(argv, "--"), mods[mod]...),
				Dir: dir, Env: goEnv(w), OKExit: []int{0, 1}})
	}
	inv.Finish = func() ([]FileNote, error) {
		if err := mergeGosec(parts, out); err != nil {
			return nil, err
		}
		return goOutsideBuild(w.Src, lists, laidOut)
	}
	return inv, nil
}

type goListPackage struct {
	Dir                                                                          string
	GoFiles, CgoFiles, TestGoFiles, XTestGoFiles, IgnoredGoFiles, InvalidGoFiles []string
	Error                                                                        *struct{ Err string }
}

// goOutsideBuild reads quavon-gosec's -files outputs (go list -json's
// fields) and notes each file of files that no listed package builds.
func goOutsideBuild(src string, lists []string, files []Target) ([]FileNote, error) {
	pkgs := map[string]goListPackage{}
	for _, l := range lists {
		data, err := os.ReadFile(l)
		if err != nil {
			return nil, fmt.Errorf("gosec's files: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		for dec.More() {
			var p goListPackage
			if err := dec.Decode(&p); err != nil {
				return nil, fmt.Errorf("gosec's files: %w", err)
			}
			pkgs[p.Dir] = p
		}
	}
	var notes []FileNote
	for _, f := range files {
		abs := filepath.Join(src, filepath.FromSlash(f.Src))
		p, ok := pkgs[filepath.Dir(abs)]
		base := filepath.Base(abs)
		built := ok && (slices.Contains(p.GoFiles, base) || slices.Contains(p.CgoFiles, base) ||
			slices.Contains(p.TestGoFiles, base) || slices.Contains(p.XTestGoFiles, base))
		var why string
		switch {
		case built:
			continue
		case !ok:
			why = "no Go package was read from its directory"
		case slices.Contains(p.IgnoredGoFiles, base):
			why = "not in the build for linux with CGO_ENABLED=0 (build constraints, a file name starting with _ or ., or cgo)"
		case slices.Contains(p.InvalidGoFiles, base) && p.Error != nil:
			why = "Go cannot read it: " + p.Error.Err
		case strings.HasPrefix(base, "_") || strings.HasPrefix(base, "."):
			why = "not in the build: Go ignores files whose names start with _ or ."
		case p.Error != nil:
			why = "its package could not be loaded: " + p.Error.Err
		default:
			why = "not in the package Go read from its directory"
		}
		notes = append(notes, FileNote{f.Index, "gosec: " + sanitise(why, MaxToolErrorBytes)})
	}
	return notes, nil
}

// moduleRoot is the nearest directory at or above dir (within src) that
// holds a go.mod; "." when none does (gosec then runs from the root).
func moduleRoot(src, dir string) string {
	for {
		if fi, err := os.Lstat(filepath.Join(src, filepath.FromSlash(dir), "go.mod")); err == nil && fi.Mode().IsRegular() {
			return dir
		}
		if dir == "." || dir == "/" || dir == "" {
			return "."
		}
		dir = path.Dir(dir)
	}
}

// mergeGosec joins gosec's per-module reports: Issues concatenated,
// "Golang errors" merged. A missing part (gosec wrote nothing) is an error.
func mergeGosec(parts []string, out string) error {
	if len(parts) == 1 {
		data, err := os.ReadFile(parts[0])
		if err != nil {
			return fmt.Errorf("gosec report: %w", err)
		}
		return os.WriteFile(out, data, 0o644)
	}
	merged := struct {
		Errors  map[string]json.RawMessage `json:"Golang errors"`
		Issues  []json.RawMessage          `json:"Issues"`
		Version string                     `json:"GosecVersion,omitempty"`
	}{Errors: map[string]json.RawMessage{}, Issues: []json.RawMessage{}}
	for _, p := range parts {
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("gosec report: %w", err)
		}
		var one struct {
			Errors  map[string]json.RawMessage `json:"Golang errors"`
			Issues  []json.RawMessage          `json:"Issues"`
			Version string                     `json:"GosecVersion"`
		}
		if err := json.Unmarshal(data, &one); err != nil {
			return fmt.Errorf("gosec report %s: %w", filepath.Base(p), err)
		}
		for k, v := range one.Errors {
			merged.Errors[k] = v
		}
		merged.Issues = append(merged.Issues, one.Issues...)
		merged.Version = one.Version
	}
	data, err := json.Marshal(merged)
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

type gosecReport struct {
	Errors map[string][]struct {
		Line   int    `json:"line"`
		Column int    `json:"column"`
		Error  string `json:"error"`
	} `json:"Golang errors"`
	Issues []json.RawMessage `json:"Issues"`
}

type gosecIssue struct {
	Severity string `json:"severity"`
	CWE      *struct {
		ID  json.RawMessage `json:"id"`
		URL string          `json:"url"`
	} `json:"cwe"`
	RuleID  string  `json:"rule_id"`
	Details string  `json:"details"`
	File    string  `json:"file"`
	Line    lineCol `json:"line"`
	Column  lineCol `json:"column"`
}

// compactGosec keeps of gosec's report what parseGosec reads: gosec adds
// each issue's code, confidence, nosec and suppressions, and its stats.
func compactGosec(raw []byte) ([]byte, bool) {
	var r gosecReport
	if decodeStrict(raw, &r) != nil {
		return nil, false
	}
	var ok bool
	if r.Issues, ok = compactElements[gosecIssue](r.Issues); !ok {
		return nil, false
	}
	b, err := json.Marshal(&r)
	return b, err == nil
}

// gosecSeverity maps gosec's severity onto ours (confidence not folded in).
var gosecSeverity = map[string]Severity{
	"HIGH": SeverityHigh, "MEDIUM": SeverityMedium, "LOW": SeverityLow,
}

// parseGosec reads gosec's -fmt json. Paths are absolute (beneath root);
// line is "12" or "12-14"; "Golang errors" (type-check errors, normal
// offline) become tool errors. Issues marked nosec or suppressed are still
// findings: Quavon ignores inline suppressions (spec SC1).
func parseGosec(c *collector, raw []byte) error {
	var r gosecReport
	if err := decodeStrict(raw, &r); err != nil {
		return err
	}
	if r.Issues == nil && r.Errors == nil {
		return errors.New("report has neither Issues nor Golang errors")
	}
	for _, file := range sortedKeys(r.Errors) {
		for _, e := range r.Errors[file] {
			c.fileError(file, e.Line, e.Column, e.Error)
		}
	}
	for _, el := range r.Issues {
		var g gosecIssue
		if err := json.Unmarshal(el, &g); err != nil {
			return fmt.Errorf("malformed issue: %w", err)
		}
		sev, ok := gosecSeverity[g.Severity]
		if !ok {
			c.toolError("gosec: finding %q dropped: unknown severity %q", clip(g.RuleID, 100), clip(g.Severity, 20))
			continue
		}
		f := Finding{
			RuleID: g.RuleID, Severity: sev, Message: g.Details,
			StartLine: g.Line.start, EndLine: g.Line.end, StartColumn: g.Column.start,
		}
		if g.CWE != nil {
			var s string
			if json.Unmarshal(g.CWE.ID, &s) != nil {
				s = string(g.CWE.ID)
			}
			f.CWE, f.HelpURI = s, g.CWE.URL
		}
		if !c.add(f, g.File) {
			break
		}
	}
	return nil
}
