package canonical

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRFC8785Vectors runs Transform against the RFC 8785 test vectors the
// JCS module ships (testdata/input → testdata/output).
func TestRFC8785Vectors(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/gowebpki/jcs").Output()
	if err != nil {
		t.Fatalf("locating the jcs module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "testdata")
	inputs, err := filepath.Glob(filepath.Join(dir, "input", "*.json"))
	if err != nil || len(inputs) < 8 {
		t.Fatalf("want the RFC 8785 vectors in %s, found %d (%v)", dir, len(inputs), err)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		raw, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, "output", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Transform(raw)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, bytes.TrimRight(want, "\n")) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// TestNumbersRFC8785AppendixB checks JSON's number serialisation against the
// IEEE-754 → JSON table of RFC 8785 Appendix B, and that NaN and the
// infinities are refused.
func TestNumbersRFC8785AppendixB(t *testing.T) {
	t.Parallel()
	vectors := []struct{ bits, want string }{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"},
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
	}
	for _, v := range vectors {
		bits, err := strconv.ParseUint(v.bits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		got, err := JSON(math.Float64frombits(bits))
		if err != nil || string(got) != v.want {
			t.Errorf("%s: got %q, %v; want %q", v.bits, got, err, v.want)
		}
	}
	for _, bits := range []string{"7fffffffffffffff", "7ff0000000000000", "fff0000000000000"} {
		b, _ := strconv.ParseUint(bits, 16, 64)
		if got, err := JSON(math.Float64frombits(b)); err == nil {
			t.Errorf("%s (NaN/Infinity) serialised as %q, want an error", bits, got)
		}
	}
}

// Input a conforming decoder could read two ways is refused.
func TestTransformRefusesAmbiguousInput(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"a":1,"a":2}`, `{"a":"\ud800"}`, `1e400`, `{"a":1`, ``} {
		if got, err := Transform([]byte(in)); err == nil {
			t.Errorf("Transform(%q) = %q, want an error", in, got)
		}
	}
}
