package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed reference is what the registry renders: a setting added,
// removed or changed without `go generate ./internal/config` fails here.
func TestReferenceIsCurrent(t *testing.T) {
	t.Parallel()
	got, err := os.ReadFile(filepath.Join("..", "..", ReferencePath))
	if err != nil {
		t.Fatalf("%v: run go generate ./internal/config", err)
	}
	if want := Reference(); !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go generate ./internal/config and commit the result", ReferencePath)
	}
}

// Every setting is one row of its group's table, with its default, secret
// mark and doc, under a section that names every process reading it.
func TestReferenceListsEverySetting(t *testing.T) {
	t.Parallel()
	ref := string(Reference())
	sections := strings.Split(ref, "\n## ")
	for _, s := range registry {
		var rows []string
		var section string
		for _, sec := range sections {
			for _, line := range strings.Split(sec, "\n") {
				if strings.HasPrefix(line, "| `"+s.Name+"` |") {
					rows = append(rows, line)
					section = sec
				}
			}
		}
		if len(rows) != 1 {
			t.Errorf("%s: %d rows", s.Name, len(rows))
			continue
		}
		cells := strings.Split(rows[0], " | ")
		if len(cells) != 4 {
			t.Errorf("%s: row %q does not have 4 cells (a | in its doc?)", s.Name, rows[0])
			continue
		}
		if (s.Default == "") != (cells[1] == "") || !strings.Contains(cells[1], s.Default) {
			t.Errorf("%s: default cell %q, want %q", s.Name, cells[1], s.Default)
		}
		if s.Secret != strings.Contains(cells[2], "secret") {
			t.Errorf("%s: secret cell %q", s.Name, cells[2])
		}
		if !strings.HasPrefix(cells[3], s.Doc) {
			t.Errorf("%s: doc cell %q", s.Name, cells[3])
		}
		if !strings.HasPrefix(section, string(s.group)+"\n") {
			t.Errorf("%s: in section %q, want %q", s.Name, strings.SplitN(section, "\n", 2)[0], s.group)
		}
		readBy := strings.SplitN(strings.SplitN(section, "Read by ", 2)[1], "\n", 2)[0]
		for _, svc := range s.Services() {
			if !strings.Contains(readBy, "`"+string(svc)+"`") {
				t.Errorf("%s: section says %q, missing %s", s.Name, readBy, svc)
			}
		}
	}
	for svc := range serviceGroups {
		if !strings.Contains(ref, "| `"+string(svc)+"` |") {
			t.Errorf("the process table lacks %s", svc)
		}
	}
}
