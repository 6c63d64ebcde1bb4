package acceptance

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const validAnswer = `{
  "criteria": [
    {"id": "c-0000000000000001", "status": "met", "evidence": [{"path": "api/users.go", "start_line": 10, "end_line": 12}, {"path": "api/users_test.go"}], "reason": "returns 404"},
    {"id": "c-0000000000000002", "status": "unmet", "evidence": [], "reason": "no log"},
    {"id": "c-0000000000000003", "status": "unclear"},
    {"id": "c-0000000000000004", "status": "met", "evidence": [{"path": "a.go", "start_line": 3}], "reason": ""}
  ]
}`

func TestDecodeAnswer(t *testing.T) {
	t.Parallel()
	a, err := DecodeAnswer([]byte(validAnswer), AnswerLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want := Answer{Criteria: []Judgement{
		{ID: "c-0000000000000001", Status: StatusMet, Evidence: []Location{{Path: "api/users.go", StartLine: 10, EndLine: 12}, {Path: "api/users_test.go"}}, Reason: "returns 404"},
		{ID: "c-0000000000000002", Status: StatusUnmet, Reason: "no log"},
		{ID: "c-0000000000000003", Status: StatusUnclear},
		{ID: "c-0000000000000004", Status: StatusMet, Evidence: []Location{{Path: "a.go", StartLine: 3, EndLine: 3}}},
	}}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("%+v\nwant %+v", a, want)
	}
	if _, err := DecodeAnswer([]byte(`{"criteria":[]}`), AnswerLimits{}); err != nil {
		t.Fatalf("empty answer: %v", err)
	}
	if _, err := DecodeAnswer([]byte(" \n{\"criteria\":[]}\n "), AnswerLimits{}); err != nil {
		t.Fatalf("white space around: %v", err)
	}
}

// invalidAnswers are refused whole.
var invalidAnswers = map[string]string{
	"empty":                   ``,
	"not an object":           `[]`,
	"null":                    `null`,
	"no criteria":             `{}`,
	"null criteria":           `{"criteria": null}`,
	"unknown top field":       `{"criteria": [], "verdict": "all met"}`,
	"unknown judgement field": `{"criteria": [{"id": "a", "status": "met", "override": true}]}`,
	"unknown location field":  `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": "a.go", "line": 3}]}]}`,
	"repeated status":         `{"criteria": [{"id": "a", "status": "unclear", "status": "met"}]}`,
	"repeated criteria":       `{"criteria": [], "criteria": [{"id": "a", "status": "met"}]}`,
	"repeated path":           `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": "a.go", "path": "b.go"}]}]}`,
	"case-folded field":       `{"Criteria": []}`,
	"trailing data":           `{"criteria": []} {"criteria": []}`,
	"trailing garbage":        `{"criteria": []} x`,
	"fenced":                  "```json\n{\"criteria\": []}\n```",
	"status case":             `{"criteria": [{"id": "a", "status": "MET"}]}`,
	"status other":            `{"criteria": [{"id": "a", "status": "passed"}]}`,
	"status missing":          `{"criteria": [{"id": "a"}]}`,
	"status number":           `{"criteria": [{"id": "a", "status": 1}]}`,
	"id missing":              `{"criteria": [{"status": "met"}]}`,
	"id empty":                `{"criteria": [{"id": "", "status": "met"}]}`,
	"id with space":           `{"criteria": [{"id": "a b", "status": "met"}]}`,
	"id non-ASCII":            `{"criteria": [{"id": "é", "status": "met"}]}`,
	"id too long":             `{"criteria": [{"id": "` + strings.Repeat("a", MaxIDBytes+1) + `", "status": "met"}]}`,
	"id repeated":             `{"criteria": [{"id": "a", "status": "unmet"}, {"id": "a", "status": "met"}]}`,
	"path missing":            `{"criteria": [{"id": "a", "status": "met", "evidence": [{"start_line": 1}]}]}`,
	"path empty":              `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": ""}]}]}`,
	"path too long":           `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": "` + strings.Repeat("a", MaxPathBytes+1) + `"}]}]}`,
	"end without start":       `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": "a.go", "end_line": 3}]}]}`,
	"start zero":              `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": "a.go", "start_line": 0}]}]}`,
	"start negative":          `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": "a.go", "start_line": -1}]}]}`,
	"end before start":        `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": "a.go", "start_line": 5, "end_line": 4}]}]}`,
	"line too large":          `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": "a.go", "start_line": 1, "end_line": 10000001}]}]}`,
	"line float":              `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": "a.go", "start_line": 1.5}]}]}`,
	"line string":             `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": "a.go", "start_line": "1"}]}]}`,
	"evidence not a list":     `{"criteria": [{"id": "a", "status": "met", "evidence": {"path": "a.go"}}]}`,
	"reason not a string":     `{"criteria": [{"id": "a", "status": "met", "reason": ["x"]}]}`,
	"deep nesting":            `{"criteria": [{"id": "a", "status": "met", "evidence": [{"path": "a.go", "x": [[[]]]}]}]}`,
	"invalid UTF-8":           "{\"criteria\": [{\"id\": \"a\", \"status\": \"met\", \"reason\": \"\xff\"}]}",
	"truncated":               `{"criteria": [{"id": "a", "status": "met"`,
}

func TestDecodeAnswerRefuses(t *testing.T) {
	t.Parallel()
	for name, raw := range invalidAnswers {
		if a, err := DecodeAnswer([]byte(raw), AnswerLimits{}); !errors.Is(err, ErrInvalidAnswer) || a.Criteria != nil {
			t.Errorf("%s: %+v, %v", name, a, err)
		}
	}
}

func TestDecodeAnswerCaps(t *testing.T) {
	t.Parallel()
	judgements := func(n, evidence int) []byte {
		var js []string
		for i := 0; i < n; i++ {
			var ev []string
			for k := 0; k < evidence; k++ {
				ev = append(ev, fmt.Sprintf(`{"path":"f%d.go","start_line":%d}`, k, k+1))
			}
			js = append(js, fmt.Sprintf(`{"id":"c-%d","status":"met","evidence":[%s]}`, i, strings.Join(ev, ",")))
		}
		return []byte(`{"criteria":[` + strings.Join(js, ",") + `]}`)
	}
	if _, err := DecodeAnswer(judgements(DefaultAnswerMaxJudgements, 1), AnswerLimits{}); err != nil {
		t.Fatalf("at the judgement cap: %v", err)
	}
	if _, err := DecodeAnswer(judgements(DefaultAnswerMaxJudgements+1, 1), AnswerLimits{}); !errors.Is(err, ErrInvalidAnswer) {
		t.Fatalf("past the judgement cap: %v", err)
	}
	if _, err := DecodeAnswer(judgements(1, DefaultAnswerMaxEvidence), AnswerLimits{}); err != nil {
		t.Fatalf("at the evidence cap: %v", err)
	}
	if _, err := DecodeAnswer(judgements(1, DefaultAnswerMaxEvidence+1), AnswerLimits{}); !errors.Is(err, ErrInvalidAnswer) {
		t.Fatalf("past the evidence cap: %v", err)
	}
	if _, err := DecodeAnswer(judgements(3, 1), AnswerLimits{MaxJudgements: 2}); !errors.Is(err, ErrInvalidAnswer) {
		t.Fatalf("MaxJudgements 2: %v", err)
	}
	big := []byte(`{"criteria":[{"id":"a","status":"met","reason":"` + strings.Repeat("x", DefaultAnswerMaxBytes) + `"}]}`)
	if _, err := DecodeAnswer(big, AnswerLimits{}); !errors.Is(err, ErrInvalidAnswer) {
		t.Fatalf("past MaxBytes: %v", err)
	}
	if _, err := DecodeAnswer(big, AnswerLimits{MaxBytes: 2 * DefaultAnswerMaxBytes}); err != nil {
		t.Fatalf("a long reason within MaxBytes is kept for Verify to cut: %v", err)
	}
}

// AnswerSchema and DecodeAnswer agree: what the decoder accepts is valid
// under the schema, and every answer the schema refuses, the decoder
// refuses too.
func TestAnswerSchemaAgrees(t *testing.T) {
	t.Parallel()
	schemaDoc, err := jsonschema.UnmarshalJSON(strings.NewReader(AnswerSchema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("answer.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("answer.json")
	if err != nil {
		t.Fatal(err)
	}
	valid := func(raw string) bool {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
		return err == nil && schema.Validate(v) == nil
	}
	for _, raw := range append(answerSeeds(t), validAnswer) {
		_, decErr := DecodeAnswer([]byte(raw), AnswerLimits{})
		if decErr == nil && !valid(raw) {
			t.Errorf("decoder accepts what the schema refuses: %s", raw)
		}
	}
	for name, raw := range invalidAnswers {
		switch name {
		case "repeated status", "repeated criteria", "repeated path", "end without start", "end before start",
			"id repeated", "id with space", "id non-ASCII", "trailing data", "trailing garbage", "invalid UTF-8", "deep nesting", "fenced", "empty", "truncated":
			continue // beyond what JSON Schema says (or not JSON at all)
		}
		if valid(raw) {
			t.Errorf("%s: the schema accepts what the decoder refuses: %s", name, raw)
		}
	}
}

func answerSeeds(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "answers", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("answer fixtures: %v", err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func TestAnswerRoundTrip(t *testing.T) {
	t.Parallel()
	a, err := DecodeAnswer([]byte(validAnswer), AnswerLimits{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeAnswer(raw, AnswerLimits{})
	if err != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, a, b)
	}
}
