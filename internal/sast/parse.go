package sast

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ErrReportTooLarge is returned by Parse for a report over MaxReportBytes.
var ErrReportTooLarge = errors.New("sast: report too large")

// Parse reads tool's raw JSON report. root is the source root the tool
// ran in (Manifest.Root): absolute paths must lie beneath it and are made
// relative; a finding whose path is anything but a clean relative path
// beneath root is dropped and reported in ToolErrors, as is any finding
// with impossible lines or an unknown severity.
//
// Malformed JSON (a tool that crashed mid-write, an empty file where the
// tool always writes a document) is an error: the caller marks the tool
// failed. Unknown fields are ignored. Each tool's parser (in its
// tool_<name>.go) says how the tool's severities map onto ours.
func Parse(tool Tool, raw []byte, root string) (Parsed, error) {
	if len(raw) > MaxReportBytes {
		return Parsed{}, fmt.Errorf("sast.Parse %s: %w (%d bytes)", tool, ErrReportTooLarge, len(raw))
	}
	s := ScannerOf(tool)
	if s == nil {
		return Parsed{}, fmt.Errorf("sast.Parse: unknown tool %q", tool)
	}
	return parseWith(&collector{tool: tool, root: root}, raw)
}

// parseWith parses raw into c (whose tool is known).
func parseWith(c *collector, raw []byte) (Parsed, error) {
	if len(raw) > MaxReportBytes {
		return Parsed{}, fmt.Errorf("sast.Parse %s: %w (%d bytes)", c.tool, ErrReportTooLarge, len(raw))
	}
	if err := ScannerOf(c.tool).parse(c, raw); err != nil {
		return Parsed{}, fmt.Errorf("sast.Parse %s: %w", c.tool, err)
	}
	return c.result(), nil
}

// decodeStrict decodes exactly one JSON document from raw into v; trailing
// data (two documents, garbage after a crash) is an error.
func decodeStrict(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("empty report")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON: data after the document")
	}
	return nil
}

// decodeArray decodes a top-level JSON array element by element, calling
// fn for each until fn returns false; the rest is still checked to be
// well-formed JSON (json.RawMessage, not decoded).
func decodeArray(raw []byte, fn func(json.RawMessage) (bool, error)) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("empty report")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return errors.New("malformed JSON: report is not an array")
	}
	more := true
	for dec.More() {
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return fmt.Errorf("malformed JSON: %w", err)
		}
		if !more {
			continue
		}
		if more, err = fn(el); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON: data after the document")
	}
	return nil
}

// lineCol is a line or column number that a tool writes as a JSON number
// or string ("12", or a range "12-14" in gosec's line).
type lineCol struct{ start, end int }

func (l *lineCol) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(b)
	}
	a, z, isRange := strings.Cut(strings.TrimSpace(s), "-")
	start, err := strconv.Atoi(a)
	if err != nil {
		return fmt.Errorf("bad position %q", clip(s, 40))
	}
	end := start
	if isRange {
		if end, err = strconv.Atoi(z); err != nil {
			return fmt.Errorf("bad position %q", clip(s, 40))
		}
	}
	l.start, l.end = start, end
	return nil
}

// MarshalJSON writes what UnmarshalJSON reads back as l: "12" or "12-14".
func (l lineCol) MarshalJSON() ([]byte, error) {
	s := strconv.Itoa(l.start)
	if l.end != l.start {
		s += "-" + strconv.Itoa(l.end)
	}
	return json.Marshal(s)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
