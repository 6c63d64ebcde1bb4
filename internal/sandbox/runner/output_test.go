package runner

import (
	"archive/tar"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sandbox/entry"
)

type tarEntry struct {
	h    tar.Header
	body string
}

func reg(name, body string) tarEntry {
	return tarEntry{h: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644}, body: body}
}

func buildTar(t testing.TB, es ...tarEntry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := e.h
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	return buf.Bytes()
}

const exitJSON = `{"run":{"step":"run","ran":true,"exitCode":3,"durationMillis":5},"stdoutBytes":2,"stderrBytes":0}`

func TestReadOutputAcceptsTheEntryProgramsOutput(t *testing.T) {
	t.Parallel()
	var setupSeen *entry.StepResult
	raw := buildTar(t,
		reg(entry.SetupName, `{"step":"setup","ran":true,"exitCode":0,"durationMillis":1}`),
		reg(entry.StdoutName, "ok"),
		reg(entry.StderrName, ""),
		reg("junit.xml", "<testsuite/>"),
		reg(entry.ExitName, exitJSON),
	)
	out, err := ReadOutput(bytes.NewReader(raw), []string{"junit.xml"}, OutputLimits{Total: 1 << 20, Raw: 2 << 20},
		func(s entry.StepResult) { setupSeen = &s })
	if err != nil {
		t.Fatal(err)
	}
	if out.Truncated || out.Files["stdout.log"] != "ok" || out.Files["junit.xml"] != "<testsuite/>" {
		t.Fatalf("output %+v", out)
	}
	if setupSeen == nil || out.Setup == nil || out.Exit == nil || out.Exit.Run.ExitCode != 3 {
		t.Fatalf("status entries not decoded: %+v %+v", setupSeen, out.Exit)
	}
}

// TestReadOutputCraftedArchives: every entry the contract does not allow
// is dropped and flagged; the rest survives.
func TestReadOutputCraftedArchives(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 5000)
	cases := []struct {
		name    string
		entries []tarEntry
		absent  []string
	}{
		{"symlink", []tarEntry{{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "junit.xml", Linkname: "/etc/passwd"}}}, []string{"junit.xml"}},
		{"hard link", []tarEntry{{h: tar.Header{Typeflag: tar.TypeLink, Name: "junit.xml", Linkname: "stdout.log"}}}, []string{"junit.xml"}},
		{"dot dot", []tarEntry{reg("../junit.xml", "x")}, []string{"../junit.xml", "junit.xml"}},
		{"absolute", []tarEntry{reg("/junit.xml", "x")}, []string{"/junit.xml", "junit.xml"}},
		{"directory", []tarEntry{{h: tar.Header{Typeflag: tar.TypeDir, Name: "junit.xml/"}}}, []string{"junit.xml/"}},
		{"device", []tarEntry{{h: tar.Header{Typeflag: tar.TypeChar, Name: "junit.xml"}}}, []string{"junit.xml"}},
		{"not requested", []tarEntry{reg("secrets.txt", "x")}, []string{"secrets.txt"}},
		{"binary", []tarEntry{reg("junit.xml", "\xff\xfe\x00binary")}, []string{"junit.xml"}},
		{"duplicate", []tarEntry{reg("junit.xml", "first"), reg("junit.xml", "second")}, nil},
		{"bad exit.json", []tarEntry{reg(entry.ExitName, `{"run":{"step":"run"},"extra":1}`)}, nil},
		{"huge status", []tarEntry{reg(entry.ExitName, `{"error":"`+strings.Repeat("a", 20000)+`"}`)}, nil},
		{"huge file", []tarEntry{reg("junit.xml", big)}, nil},
		{"many files", func() []tarEntry {
			var es []tarEntry
			for range 200 {
				es = append(es, reg("other.txt", "x"))
			}
			return es
		}(), []string{"other.txt"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			raw := buildTar(t, append(c.entries, reg(entry.StdoutName, "kept"))...)
			out, err := ReadOutput(bytes.NewReader(raw), []string{"junit.xml"}, OutputLimits{Total: 1000, Raw: 1 << 20}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !out.Truncated {
				t.Fatal("not flagged")
			}
			for _, name := range c.absent {
				if _, ok := out.Files[name]; ok {
					t.Fatalf("%s kept", name)
				}
			}
			if out.Files[entry.StdoutName] != "kept" && c.name != "huge file" {
				t.Fatalf("lost the legitimate entry: %q", out.Files[entry.StdoutName])
			}
			if c.name == "duplicate" && out.Files["junit.xml"] != "first" {
				t.Fatalf("duplicate replaced the first: %q", out.Files["junit.xml"])
			}
			if c.name == "huge file" && len(out.Files["junit.xml"]) != 1000 {
				t.Fatalf("huge file kept %d bytes, want the cap", len(out.Files["junit.xml"]))
			}
			if out.Exit != nil && strings.HasPrefix(c.name, "bad") {
				t.Fatal("malformed exit.json decoded")
			}
		})
	}
}

func TestReadOutputCaps(t *testing.T) {
	t.Parallel()
	raw := buildTar(t, reg("a", "ééééé"), reg("b", "0123456789"), reg(entry.StdoutName, "x"))
	// A cut inside a rune drops the partial rune; the total cap applies
	// across files.
	out, err := ReadOutput(bytes.NewReader(raw), []string{"a", "b"}, OutputLimits{Total: 8, PerFile: 5, Raw: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Files["a"] != "éé" || out.Files["b"] != "0123" || !out.Truncated {
		t.Fatalf("files %q", out.Files)
	}
	if _, ok := out.Files[entry.StdoutName]; !ok {
		t.Fatal("a file beyond the total cap must still appear (empty)")
	}
	// Past the raw cap parsing stops.
	endless := buildTar(t, reg("junit.xml", strings.Repeat("y", 100_000)))
	out, err = ReadOutput(bytes.NewReader(endless), []string{"junit.xml"}, OutputLimits{Total: 10, Raw: 50_000}, nil)
	if !errors.Is(err, ErrOutputOverflow) || !out.Truncated {
		t.Fatalf("raw cap: %v %+v", err, out)
	}
	// Garbage and a cut-off stream keep what was read.
	out, err = ReadOutput(bytes.NewReader(append(buildTar(t, reg(entry.StdoutName, "x"))[:1024], 1, 2, 3)), nil, OutputLimits{Total: 10, Raw: 1 << 20}, nil)
	if err != nil || out.Files[entry.StdoutName] != "x" {
		t.Fatalf("cut stream: %v %+v", err, out)
	}
	out, err = ReadOutput(strings.NewReader("not a tar at all, not a tar at all"), nil, OutputLimits{Total: 10, Raw: 1 << 20}, nil)
	if err != nil || !out.Truncated {
		t.Fatalf("garbage: %v %+v", err, out)
	}
}

func FuzzReadOutput(f *testing.F) {
	f.Add(buildTar(f, reg(entry.StdoutName, "ok"), reg(entry.ExitName, exitJSON)))
	f.Add(buildTar(f, tarEntry{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "a", Linkname: "/"}}))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := OutputLimits{Total: 4096, PerFile: 2048, Raw: 1 << 20}
		out, _ := ReadOutput(bytes.NewReader(data), []string{"junit.xml"}, lim, nil)
		var total int
		for name, body := range out.Files {
			switch name {
			case entry.StdoutName, entry.StderrName, "junit.xml":
			default:
				t.Fatalf("kept %q", name)
			}
			if !utf8Valid(body) || int64(len(body)) > lim.PerFile {
				t.Fatalf("kept invalid or oversize %q", name)
			}
			total += len(body)
		}
		if int64(total) > lim.Total {
			t.Fatalf("kept %d bytes, cap %d", total, lim.Total)
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
