// Command quavon-scan-driver runs the deterministic scanners inside the
// sandbox: it is /opt/quavon/bin/quavon-scan in the "scanners" image and the
// run command of every SAST job. See internal/sast/driver. It takes no
// arguments; the request is /work/scan-request.json.
//
// It is built static, like the entry program:
//
//	CGO_ENABLED=0 go build -trimpath ./cmd/quavon-scan-driver
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/quavon/quavon/internal/sast/driver"
)

func main() {
	if len(os.Args) != 1 {
		fmt.Fprintln(os.Stderr, "quavon-scan-driver: takes no arguments (the request is /work/scan-request.json)")
		os.Exit(2)
	}
	if err := driver.Run(context.Background(), driver.DefaultConfig()); err != nil {
		fmt.Fprintln(os.Stderr, "quavon-scan-driver:", err)
		os.Exit(1)
	}
}
