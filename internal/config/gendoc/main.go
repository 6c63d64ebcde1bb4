// Command gendoc writes the configuration reference generated from
// internal/config's registry (config.Reference). Run it through
//
//	go generate ./internal/config
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/quavon/quavon/internal/config"
)

func main() {
	out := flag.String("o", "", "write the reference to `FILE` (default: stdout)")
	flag.Parse()
	ref := config.Reference()
	var err error
	if *out == "" {
		_, err = os.Stdout.Write(ref)
	} else {
		err = os.WriteFile(*out, ref, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}
