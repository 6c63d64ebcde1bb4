// Command quavon-gosec is gosec's analysis for the scan driver: gosec's
// default rules and analyzers over the packages of one Go module, loaded
// at once, with #nosec ignored, writing gosec's JSON report. See
// internal/sast/gosec. It is /opt/quavon/tools/bin/quavon-gosec in the
// scanners image, built static like the driver:
//
//	CGO_ENABLED=0 go build -trimpath ./cmd/quavon-gosec
//
// Usage, from the module root: quavon-gosec [-tests] [-files FILE]
// [-std-export FILE] [-gocache-seed DIR] -out FILE PKG...
// (PKG "." or "./dir"). Exit status as gosec's: 0 nothing found, 1 an
// issue or an error in the report, 2 no report.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/quavon/quavon/internal/sast/gosec"
)

func main() {
	if gosec.IsDriver() { // go/packages' driver of this program's own load
		if err := gosec.ServeDriver(os.Args[1:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "quavon-gosec (driver):", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("quavon-gosec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tests := fs.Bool("tests", false, "include test files")
	out := fs.String("out", "", "write the JSON report to this file")
	version := fs.Bool("version", false, "print gosec's version")
	files := fs.String("files", "", "also write each PKG directory's Go files, built and left out, to this `file` (as go list -e -json)")
	stdExport := fs.String("std-export", "", "the map of the standard library's export data (`IMPORTPATH FILE` lines): compile none of PKG")
	seed := fs.String("gocache-seed", "", "the image's prebuilt build `cache`: seed GOCACHE with all of it before anything is compiled")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *version {
		fmt.Fprintf(stderr, "Version: %s\n", gosec.Version())
		return 0
	}
	if *out == "" || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: quavon-gosec [-tests] [-files FILE] [-std-export FILE] [-gocache-seed DIR] -out FILE PKG...")
		return 2
	}
	found, err := report(gosec.Options{Packages: fs.Args(), Tests: *tests, Log: stderr, Files: *files, StdExport: *stdExport,
		CacheSeed: *seed}, *out)
	switch {
	case err != nil:
		fmt.Fprintln(stderr, "quavon-gosec:", err)
		return 2
	case found:
		return 1
	}
	return 0
}

func report(opt gosec.Options, out string) (bool, error) {
	f, err := os.Create(out)
	if err != nil {
		return false, err
	}
	found, err := gosec.Run(opt, f)
	return found, errors.Join(err, f.Close())
}
