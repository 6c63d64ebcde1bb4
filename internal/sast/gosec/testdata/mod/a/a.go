package a

import (
	"crypto/md5"
	"os/exec"
)

// Run runs c. #nosec is ignored: the finding stays.
func Run(c string) error {
	return exec.Command("sh", "-c", c).Run() // #nosec G204
}

// Sum is MD5.
func Sum(b []byte) [16]byte { return md5.Sum(b) }
