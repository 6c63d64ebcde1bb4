package sast

import (
	"encoding/json"
	"os"
)

// Compaction: the driver rewrites each tool's report with only what the
// tool's parser reads (CompactReport), in the sandbox, before the report
// becomes an artefact. The signed result carries every report: the runner
// canonicalises and signs it, Valkey carries it, and the worker verifies,
// canonicalises and decodes it again, so its size is time on both sides.
// On the 50-file benchmark ast-grep's report went from 497 KB to 65 KB
// this way, and from the job's end to the result in the worker's hands
// took 120-150 ms before, 50-90 ms after; bandit's, gosec's, ESLint's and
// Ruff's went from 79, 36, 28 and 36 KB to 52, 18, 13 and 22 KB.
//
// A compacted report is the parser's own decoding encoded again, so the
// parser reads the same from it: FuzzParse* hold Parse of both equal, on
// any input. A report the parser would refuse, or read only in part (over
// MaxReportBytes, a malformed element), is left whole for the parser to
// report, and so is one compaction would not make smaller.

// CompactReport rewrites the report of tool t at path with only what the
// tool's parser reads; it leaves the file as it is when that is not
// smaller, cannot be done, or the tool has no compaction.
func CompactReport(t Tool, path string) {
	s := ScannerOf(t)
	if s == nil || s.compact == nil {
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil || len(raw) > MaxReportBytes {
		return
	}
	if out, ok := s.compact(raw); ok && len(out) < len(raw) {
		os.WriteFile(path, out, 0o644)
	}
}

// compactElements decodes each element as a T and encodes it again; false
// if one does not decode. nil stays nil (a missing array, which parsers
// tell from an empty one).
func compactElements[T any](els []json.RawMessage) ([]json.RawMessage, bool) {
	if els == nil {
		return nil, true
	}
	out := make([]json.RawMessage, 0, len(els))
	for _, el := range els {
		var v T
		if json.Unmarshal(el, &v) != nil {
			return nil, false
		}
		b, err := json.Marshal(&v)
		if err != nil {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}

// compactArray compacts a report that is a JSON array of T (decodeArray's
// reading of it).
func compactArray[T any](raw []byte) ([]byte, bool) {
	els := []json.RawMessage{}
	if decodeArray(raw, func(el json.RawMessage) (bool, error) { els = append(els, el); return true, nil }) != nil {
		return nil, false
	}
	out, ok := compactElements[T](els)
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(out)
	return b, err == nil
}
