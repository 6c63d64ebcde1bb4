package patch

import (
	"strings"
	"testing"
)

func TestCachedReadsEachBlobOnce(t *testing.T) {
	t.Parallel()
	reads := 0
	content := map[string]string{"a.txt": "a\n", "b.txt": "b\n", "big.txt": strings.Repeat("x", 100)}
	entries := map[string]Entry{}
	for p, c := range content {
		entries[p] = Entry{Mode: ModeFile, BlobSHA: BlobSHA([]byte(c)), Size: int64(len(c))}
	}
	l := NewListing(entries, func(p string, _ Entry) ([]byte, error) { reads++; return []byte(content[p]), nil }).Cached(10)
	for range 3 {
		for _, p := range []string{"a.txt", "b.txt", "big.txt"} {
			if b, err := l.Read(p); err != nil || string(b) != content[p] {
				t.Fatalf("%s: %q %v", p, b, err)
			}
		}
	}
	// a and b are cached (4 bytes); big.txt is over the budget: read each time.
	if reads != 2+3 {
		t.Errorf("%d reads, want 5", reads)
	}
	// The cache never bypasses the blob check.
	bad := NewListing(entries, func(string, Entry) ([]byte, error) { return []byte("tampered"), nil }).Cached(1 << 20)
	if _, err := bad.Read("a.txt"); err == nil {
		t.Error("a tampered blob was returned")
	}
}
