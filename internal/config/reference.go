package config

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// The configuration reference, docs/configuration.md, is generated from the
// registry; TestReferenceIsCurrent fails when the committed file is stale.
//go:generate go run ./gendoc -o ../../docs/configuration.md

// ReferencePath is where the reference lives, from the repository root.
const ReferencePath = "docs/configuration.md"

// Reference renders the configuration reference from the registry: every
// setting with its default, whether it is a secret file, what it means, and
// the processes that read it.
func Reference() []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Configuration reference\n\n")
	p("<!-- Generated from internal/config/registry.go by `go generate ./internal/config`: do not edit.\n")
	p("     TestReferenceIsCurrent (internal/config) fails when this file is stale. -->\n\n")
	p("Every setting is an environment variable `QUAVON_*`. Each process reads only the groups of\n")
	p("settings listed for it below and refuses to start on any other `QUAVON_*` variable: an unknown\n")
	p("name (a typo never falls back to a default) and a setting of another process. A **secret**\n")
	p("is given as the path of a file (`…_FILE`: a regular file, not writable by group or others,\n")
	p("so 0600 or 0400); the same name without `_FILE` is refused. `QUAVON_TEST_*` variables belong\n")
	p("to the test suite and are ignored. An empty default means unset.\n\n")

	groups := groupOrder()
	p("## Who reads what\n\n")
	p("`quavon …` rows are views of the CLI: `%s` is the view of every database command.\n\n", ServiceMigrate)
	p("| process | groups of settings |\n| --- | --- |\n")
	for _, svc := range services() {
		var links []string
		for _, g := range groups {
			if slices.Contains(serviceGroups[svc], g) {
				links = append(links, fmt.Sprintf("[%s](#%s)", g, anchor(string(g))))
			}
		}
		p("| `%s` | %s |\n", svc, strings.Join(links, ", "))
	}
	for _, g := range groups {
		p("\n## %s\n\n", g)
		var readers []string
		for _, svc := range services() {
			if slices.Contains(serviceGroups[svc], g) {
				readers = append(readers, "`"+string(svc)+"`")
			}
		}
		if len(readers) == 0 {
			readers = []string{"no process yet"}
		}
		p("Read by %s.\n\n| variable | default | secret | meaning |\n| --- | --- | --- | --- |\n", strings.Join(readers, ", "))
		for _, s := range registry {
			if s.group != g {
				continue
			}
			def := ""
			if s.Default != "" {
				def = "`" + s.Default + "`"
			}
			secret := ""
			if s.Secret {
				secret = "**secret** (file)"
			}
			p("| `%s` | %s | %s | %s |\n", s.Name, def, secret, cell(s.Doc))
		}
	}
	return b.Bytes()
}

// groupOrder lists the groups in the order the registry first names them.
func groupOrder() []group {
	var out []group
	for _, s := range registry {
		if !slices.Contains(out, s.group) {
			out = append(out, s.group)
		}
	}
	return out
}

func services() []Service {
	var out []Service
	for svc := range serviceGroups {
		out = append(out, svc)
	}
	slices.Sort(out)
	return out
}

// anchor is GitHub's heading anchor for a plain heading.
func anchor(heading string) string {
	return strings.ReplaceAll(strings.ToLower(heading), " ", "-")
}

// cell keeps a doc string inside its table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
