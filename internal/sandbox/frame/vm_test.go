package frame

import (
	"bytes"
	"strings"
	"testing"
)

func TestBootRoundTrip(t *testing.T) {
	t.Parallel()
	b := &Boot{Seed: bytes.Repeat([]byte{7}, SeedSize), Env: []string{"PATH=/bin", "CI=true"}, TmpBytes: 1, OutputBytes: 2, NoFile: 3, FileSizeBytes: 4, Pids: 5}
	var buf bytes.Buffer
	if err := WriteBoot(&buf, b); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("rest")
	got, err := ReadBoot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Seed, b.Seed) || strings.Join(got.Env, ",") != "PATH=/bin,CI=true" || got.Pids != 5 {
		t.Fatalf("got %+v", got)
	}
	if buf.String() != "rest" {
		t.Fatalf("ReadBoot read past the preamble: %q left", buf.String())
	}
	for _, bad := range []*Boot{
		{Seed: []byte{1}, TmpBytes: 1, OutputBytes: 1, NoFile: 1, FileSizeBytes: 1, Pids: 1},
		{Seed: b.Seed, Env: []string{"NOEQUALS"}, TmpBytes: 1, OutputBytes: 1, NoFile: 1, FileSizeBytes: 1, Pids: 1},
		{Seed: b.Seed, TmpBytes: 0, OutputBytes: 1, NoFile: 1, FileSizeBytes: 1, Pids: 1},
	} {
		if err := WriteBoot(&bytes.Buffer{}, bad); err == nil {
			t.Errorf("WriteBoot(%+v) accepted", bad)
		}
	}
}

// FuzzReadBoot: a hostile or broken peer never makes ReadBoot panic or
// accept an invalid preamble.
func FuzzReadBoot(f *testing.F) {
	var buf bytes.Buffer
	WriteBoot(&buf, &Boot{Seed: make([]byte, SeedSize), Env: []string{"A=b"}, TmpBytes: 1, OutputBytes: 1, NoFile: 1, FileSizeBytes: 1, Pids: 1})
	f.Add(buf.Bytes())
	f.Add([]byte(BootMagic + "\x00\x00\x00\x02{}"))
	f.Add([]byte(BootMagic + "\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReadBoot(bytes.NewReader(data))
		if err == nil {
			if verr := b.Validate(); verr != nil {
				t.Fatalf("accepted an invalid preamble: %v", verr)
			}
		}
	})
}
