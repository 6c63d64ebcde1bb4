package acceptance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Status is a criterion's verdict. There is no "fail": AC never fails a
// check.
type Status string

// Statuses, exactly as the judge must write them.
const (
	StatusMet     Status = "met"
	StatusUnmet   Status = "unmet"
	StatusUnclear Status = "unclear"
)

func (s Status) valid() bool { return s == StatusMet || s == StatusUnmet || s == StatusUnclear }

// Location is a piece of evidence: a file of the pull request and, unless
// StartLine is 0, the inclusive range of its head lines.
type Location struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line,omitempty"`
	EndLine   int    `json:"end_line,omitempty"`
}

// WholeFile reports whether l cites a file rather than lines.
func (l Location) WholeFile() bool { return l.StartLine == 0 }

// Judgement is the judge's answer for one criterion, as decoded. Nothing
// in it is trusted until Verify has checked it.
type Judgement struct {
	ID       string     `json:"id"`
	Status   Status     `json:"status"`
	Evidence []Location `json:"evidence,omitempty"`
	Reason   string     `json:"reason,omitempty"`
}

// Answer is the judge's whole answer.
type Answer struct {
	Criteria []Judgement `json:"criteria"`
}

// AnswerLimits caps DecodeAnswer. Zero or negative fields take the
// defaults.
type AnswerLimits struct {
	MaxBytes      int // the raw answer
	MaxJudgements int // entries of "criteria"
	MaxEvidence   int // locations per entry
}

// Default answer limits and fixed bounds.
const (
	DefaultAnswerMaxBytes      = 256 << 10
	DefaultAnswerMaxJudgements = 100
	DefaultAnswerMaxEvidence   = 16
	// MaxIDBytes bounds a criterion id in an answer (ours are 18 bytes).
	MaxIDBytes = 64
	// MaxPathBytes bounds a cited path.
	MaxPathBytes = 1024
	// MaxLine bounds a cited line number.
	MaxLine = 10_000_000
	// maxAnswerDepth is the answer's nesting: answer, criteria,
	// judgement, evidence, location.
	maxAnswerDepth = 5
)

func (l AnswerLimits) withDefaults() AnswerLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultAnswerMaxBytes
	}
	if l.MaxJudgements <= 0 {
		l.MaxJudgements = DefaultAnswerMaxJudgements
	}
	if l.MaxEvidence <= 0 {
		l.MaxEvidence = DefaultAnswerMaxEvidence
	}
	return l
}

// ErrInvalidAnswer is returned (wrapped) for any answer DecodeAnswer
// refuses. A caller that gets it verifies an empty Answer: every criterion
// is then unclear.
var ErrInvalidAnswer = errors.New("acceptance: invalid judge answer")

// AnswerSchema is the JSON Schema (2020-12) of the answer DecodeAnswer
// accepts under the default limits, for the model call's structured
// output. The decoder also requires end_line only with start_line,
// end_line ≥ start_line and distinct ids, which the schema cannot say.
const AnswerSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["criteria"],
  "properties": {
    "criteria": {
      "type": "array",
      "maxItems": 100,
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "status"],
        "properties": {
          "id": {"type": "string", "minLength": 1, "maxLength": 64},
          "status": {"enum": ["met", "unmet", "unclear"]},
          "evidence": {
            "type": ["array", "null"],
            "maxItems": 16,
            "items": {
              "type": "object",
              "additionalProperties": false,
              "required": ["path"],
              "properties": {
                "path": {"type": "string", "minLength": 1, "maxLength": 1024},
                "start_line": {"type": "integer", "minimum": 1, "maximum": 10000000},
                "end_line": {"type": "integer", "minimum": 1, "maximum": 10000000}
              }
            }
          },
          "reason": {"type": "string"}
        }
      }
    }
  }
}`

type wireLocation struct {
	Path      *string `json:"path"`
	StartLine *int    `json:"start_line"`
	EndLine   *int    `json:"end_line"`
}

type wireJudgement struct {
	ID       *string        `json:"id"`
	Status   *string        `json:"status"`
	Evidence []wireLocation `json:"evidence"`
	Reason   string         `json:"reason"`
}

type wireAnswer struct {
	Criteria *[]wireJudgement `json:"criteria"`
}

// DecodeAnswer decodes the judge's answer strictly: one JSON object of
// AnswerSchema's shape and nothing after it, at most lim.MaxBytes, no
// unknown or repeated field names, no nesting beyond the schema's, ids
// distinct, statuses exactly "met", "unmet" or "unclear", line ranges
// well-formed. Reasons are kept as given (Verify cuts and cleans them);
// paths are checked by Verify. Any violation refuses the whole answer with
// ErrInvalidAnswer.
func DecodeAnswer(data []byte, lim AnswerLimits) (Answer, error) {
	lim = lim.withDefaults()
	fail := func(format string, args ...any) (Answer, error) {
		return Answer{}, fmt.Errorf("%w: %s", ErrInvalidAnswer, fmt.Sprintf(format, args...))
	}
	if len(data) > lim.MaxBytes {
		return fail("%d bytes, more than %d", len(data), lim.MaxBytes)
	}
	if !utf8.Valid(data) {
		return fail("not UTF-8")
	}
	if err := checkJSONShape(data, maxAnswerDepth, answerFields); err != nil {
		return fail("%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wireAnswer
	if err := dec.Decode(&w); err != nil {
		return fail("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("data after the answer")
	}
	if w.Criteria == nil {
		return fail(`no "criteria"`)
	}
	if len(*w.Criteria) > lim.MaxJudgements {
		return fail("%d criteria, more than %d", len(*w.Criteria), lim.MaxJudgements)
	}
	out := Answer{Criteria: make([]Judgement, 0, len(*w.Criteria))}
	ids := map[string]bool{}
	for i, wj := range *w.Criteria {
		if wj.ID == nil || *wj.ID == "" || len(*wj.ID) > MaxIDBytes || !printableASCII(*wj.ID) {
			return fail("criteria[%d]: id missing or not 1 to %d printable ASCII characters", i, MaxIDBytes)
		}
		id := *wj.ID
		if ids[id] {
			return fail("criteria[%d]: id %q repeated", i, id)
		}
		ids[id] = true
		if wj.Status == nil || !Status(*wj.Status).valid() {
			return fail("criteria[%d]: status must be met, unmet or unclear", i)
		}
		if len(wj.Evidence) > lim.MaxEvidence {
			return fail("criteria[%d]: %d locations, more than %d", i, len(wj.Evidence), lim.MaxEvidence)
		}
		j := Judgement{ID: id, Status: Status(*wj.Status), Reason: wj.Reason}
		for k, wl := range wj.Evidence {
			loc, err := wl.location()
			if err != nil {
				return fail("criteria[%d].evidence[%d]: %v", i, k, err)
			}
			j.Evidence = append(j.Evidence, loc)
		}
		out.Criteria = append(out.Criteria, j)
	}
	return out, nil
}

func (wl wireLocation) location() (Location, error) {
	if wl.Path == nil || *wl.Path == "" || len(*wl.Path) > MaxPathBytes {
		return Location{}, fmt.Errorf("path missing or longer than %d bytes", MaxPathBytes)
	}
	l := Location{Path: *wl.Path}
	switch {
	case wl.StartLine == nil && wl.EndLine == nil:
		return l, nil
	case wl.StartLine == nil:
		return Location{}, errors.New("end_line without start_line")
	}
	l.StartLine, l.EndLine = *wl.StartLine, *wl.StartLine
	if wl.EndLine != nil {
		l.EndLine = *wl.EndLine
	}
	if l.StartLine < 1 || l.EndLine < l.StartLine || l.EndLine > MaxLine {
		return Location{}, fmt.Errorf("line range %d-%d not within 1-%d and ordered", l.StartLine, l.EndLine, MaxLine)
	}
	return l, nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// answerFields are the answer's field names, exactly: encoding/json
// matches names case-insensitively, so without this "Status" would
// quietly stand in for "status".
var answerFields = map[string]bool{
	"criteria": true, "id": true, "status": true, "evidence": true, "reason": true,
	"path": true, "start_line": true, "end_line": true,
}

// checkJSONShape walks data's tokens and refuses a field name outside
// fields (exact case), a repeated field name in any object (decoders
// disagree on which copy wins, so a judge could show one status and mean
// another) and nesting deeper than maxDepth. Where each field may appear
// is the decoder's (DisallowUnknownFields) to check.
func checkJSONShape(data []byte, maxDepth int, fields map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		keys   map[string]bool
		expect bool // object: the next string token is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			top := &stack[len(stack)-1]
			if top.expect {
				if key, ok := tok.(string); ok {
					if !fields[key] {
						return fmt.Errorf("unknown field %q", key)
					}
					if top.keys[key] {
						return fmt.Errorf("field %q repeated", key)
					}
					top.keys[key] = true
					top.expect = false
					continue
				}
			} else {
				top.expect = true // this token is the value
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxDepth {
				return fmt.Errorf("nested deeper than %d", maxDepth)
			}
			stack = append(stack, frame{object: tok == json.Delim('{'), keys: map[string]bool{}, expect: true})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}
