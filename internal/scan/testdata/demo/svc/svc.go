// Package svc has the mistakes the scanners exist for (Quavon demo corpus).
package svc

import (
	"crypto/md5"
	"crypto/tls"
	"database/sql"
	"fmt"
	"math/rand"
	"net/http"
	"os/exec"
)

// Run runs a user-supplied command line through the shell.
func Run(line string) ([]byte, error) {
	return exec.Command("sh", "-c", line).Output()
}

// Client skips certificate checks.
func Client() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

// Find builds SQL from input.
func Find(db *sql.DB, name string) (*sql.Rows, error) {
	return db.Query(fmt.Sprintf("SELECT * FROM users WHERE name = '%s'", name))
}

// Token is guessable.
func Token() string {
	return fmt.Sprintf("%x", rand.Int63())
}

// Sum is a weak hash.
func Sum(b []byte) [16]byte {
	return md5.Sum(b)
}
