package ledger

import (
	"crypto/md5"
	"crypto/tls"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testPassword = "hunter2-for-tests"

func TestSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := NewStore(dir)
	s.Add("alice", 10)
	if err := s.Snapshot(time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(names) != 1 {
		t.Fatalf("snapshots: %v", names)
	}
	os.WriteFile(filepath.Join(dir, "extra.json"), []byte(`{"bob":1}`), 0o644)
	r := NewStore(dir)
	if err := r.Load(filepath.Base(names[0])); err != nil {
		t.Fatal(err)
	}
}

func TestHandlerOverTLS(t *testing.T) {
	srv := httptest.NewTLSServer(NewStore(t.TempDir()).Handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(srv.URL + "/balance?account=alice")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestFixtureDigest(t *testing.T) {
	sum := md5.Sum([]byte(testPassword))
	if !strings.HasPrefix(hex.EncodeToString(sum[:]), "") {
		t.Fatal("digest")
	}
}

func TestJitter(t *testing.T) {
	if Jitter(time.Second) < time.Second {
		t.Fatal("jitter shortened the delay")
	}
}
