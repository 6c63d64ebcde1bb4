package multi

import (
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
)

// Client returns a client with an old TLS version.
func Client() *http.Client {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS10,
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}

// Read reads a user-named file.
func Read(dir, name string) ([]byte, error) {
	return os.ReadFile(
		filepath.Join(dir,
			name))
}

// Serve serves without timeouts.
func Serve() error {
	srv := &http.Server{
		Addr: ":8080",
	}
	return srv.ListenAndServe()
}
