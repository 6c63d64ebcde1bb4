package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of a policy document.
const (
	// MaxDocumentBytes caps a stored or submitted document.
	MaxDocumentBytes = 64 << 10
	// MaxDepth caps nesting, counting the top-level object as 1; the
	// schema itself needs 5.
	MaxDepth = 8
	// MaxErrors caps the field errors reported for one document.
	MaxErrors = 100
)

// Parse reads a policy document strictly: UTF-8 JSON, one top-level
// object, at most MaxDocumentBytes and MaxDepth, keys matched exactly
// (case-sensitive), no unknown or duplicate keys, no null, integers where
// the schema has numbers. Omitted fields take their defaults. The result
// is validated; every refusal is a *[ValidationError] carrying field-level
// errors.
func Parse(data []byte) (Policy, error) {
	if len(data) > MaxDocumentBytes {
		return Policy{}, invalid(FieldError{Code: CodeTooLarge, Message: fmt.Sprintf("want at most %d bytes", MaxDocumentBytes)})
	}
	if !utf8.Valid(data) {
		// encoding/json would silently replace invalid bytes with U+FFFD.
		return Policy{}, invalid(FieldError{Code: CodeInvalidJSON, Message: "want UTF-8"})
	}
	p := Default()
	w := walker{dec: json.NewDecoder(bytes.NewReader(data))}
	w.dec.UseNumber()
	if err := w.document(reflect.ValueOf(&p).Elem()); err != nil {
		// The reason the walk stopped is kept even when the list is full.
		return Policy{}, invalid(append(w.errs[:min(len(w.errs), MaxErrors-1)], *err)...)
	}
	if len(w.errs) > 0 {
		return Policy{}, invalid(w.errs...)
	}
	if errs := p.Validate(); len(errs) > 0 {
		return Policy{}, invalid(errs...)
	}
	return p, nil
}

func invalid(errs ...FieldError) error {
	return &ValidationError{Errors: errs[:min(len(errs), MaxErrors)]}
}

// walker decodes a document token by token into a Policy, guided by the
// Go types: an object fills a struct by json tag, an array a slice, and
// strings, booleans and integers the matching kinds. Walking the tokens,
// rather than json.Unmarshal, is what sees duplicate keys and reports
// every problem with its JSON pointer.
type walker struct {
	dec  *json.Decoder
	errs []FieldError
}

func (w *walker) add(p string, code Code, format string, args ...any) {
	w.errs = append(w.errs, FieldError{Path: p, Code: code, Message: fmt.Sprintf(format, args...)})
}

// full stops the walk once MaxErrors problems are known.
func (w *walker) full(p string) *FieldError {
	if len(w.errs) < MaxErrors {
		return nil
	}
	return &FieldError{Path: p, Code: CodeTooMany, Message: fmt.Sprintf("more than %d problems; stopped reading", MaxErrors)}
}

func (w *walker) token() (json.Token, *FieldError) {
	t, err := w.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		msg := err.Error()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			msg = fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
		}
		return nil, &FieldError{Code: CodeInvalidJSON, Message: msg}
	}
	return t, nil
}

func (w *walker) document(v reflect.Value) *FieldError {
	t, err := w.token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return &FieldError{Code: CodeInvalidType, Message: "want a JSON object"}
	}
	if err := w.object(v, "", 1); err != nil {
		return err
	}
	if _, err := w.dec.Token(); !errors.Is(err, io.EOF) {
		return &FieldError{Code: CodeInvalidJSON, Message: "want nothing after the top-level object"}
	}
	return nil
}

// value reads one value for v at path p, nested depth deep.
func (w *walker) value(v reflect.Value, p string, depth int) *FieldError {
	if depth > MaxDepth {
		return &FieldError{Path: p, Code: CodeTooDeep, Message: fmt.Sprintf("want at most %d levels of nesting", MaxDepth)}
	}
	t, err := w.token()
	if err != nil {
		return err
	}
	mismatch := func(want string) *FieldError {
		w.add(p, CodeInvalidType, "want %s", want)
		return w.skipRest(t, p, depth)
	}
	switch v.Kind() {
	case reflect.Struct:
		if d, ok := t.(json.Delim); !ok || d != '{' {
			return mismatch("an object")
		}
		return w.object(v, p, depth)
	case reflect.Slice:
		if d, ok := t.(json.Delim); !ok || d != '[' {
			return mismatch("an array")
		}
		s := reflect.Zero(v.Type()) // nil: the canonical empty list
		for i := 0; w.dec.More(); i++ {
			e := reflect.New(v.Type().Elem()).Elem()
			if err := w.value(e, p+"/"+strconv.Itoa(i), depth+1); err != nil {
				return err
			}
			s = reflect.Append(s, e)
			if err := w.full(p); err != nil {
				return err
			}
		}
		v.Set(s)
		_, err := w.token() // ]
		return err
	case reflect.String:
		s, ok := t.(string)
		if !ok {
			return mismatch("a string")
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := t.(bool)
		if !ok {
			return mismatch("true or false")
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, ok := t.(json.Number)
		if !ok || strings.ContainsAny(string(n), ".eE") {
			return mismatch("an integer")
		}
		i, perr := strconv.ParseInt(string(n), 10, 64)
		if perr != nil || v.OverflowInt(i) {
			w.add(p, CodeOutOfRange, "integer out of range")
			return nil
		}
		v.SetInt(i)
	default:
		panic(fmt.Sprintf("policy: no decoding for %s", v.Type()))
	}
	return nil
}

// object reads the members of an object whose { was read into struct v.
func (w *walker) object(v reflect.Value, p string, depth int) *FieldError {
	fields := jsonFields(v.Type())
	seen := make(map[string]bool, len(fields))
	for w.dec.More() {
		t, err := w.token()
		if err != nil {
			return err
		}
		key := t.(string) // the decoder only yields string keys inside objects
		kp := p + "/" + pointerEscape(key)
		switch i, known := fields[key]; {
		case seen[key]:
			w.add(kp, CodeDuplicateKey, "key appears more than once")
			err = w.skip(kp, depth+1)
		case !known:
			w.add(kp, CodeUnknownField, "not in the schema (keys are case-sensitive)")
			err = w.skip(kp, depth+1)
		default:
			err = w.value(v.Field(i), kp, depth+1)
		}
		seen[key] = true
		if err != nil {
			return err
		}
		if err := w.full(p); err != nil {
			return err
		}
	}
	_, err := w.token() // }
	return err
}

// skip reads and discards one value.
func (w *walker) skip(p string, depth int) *FieldError {
	if depth > MaxDepth {
		return &FieldError{Path: p, Code: CodeTooDeep, Message: fmt.Sprintf("want at most %d levels of nesting", MaxDepth)}
	}
	t, err := w.token()
	if err != nil {
		return err
	}
	return w.skipRest(t, p, depth)
}

// skipRest discards the rest of a value whose first token was t. Depth is
// still bounded; duplicate keys inside need no report, the value is
// already an error.
func (w *walker) skipRest(t json.Token, p string, depth int) *FieldError {
	d, ok := t.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return nil
	}
	for w.dec.More() {
		if d == '{' {
			if _, err := w.token(); err != nil { // key
				return err
			}
		}
		if err := w.skip(p, depth+1); err != nil {
			return err
		}
	}
	_, err := w.token()
	return err
}

// jsonFields maps each json tag name of struct type t to its field index.
func jsonFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = i
	}
	return m
}

// pointerEscape escapes a key for a JSON pointer (RFC 6901) and clips
// hostile lengths before they reach an error message.
func pointerEscape(k string) string {
	const n = 64
	if len(k) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(k[cut]) {
			cut--
		}
		k = k[:cut] + "…"
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// Marshal returns the canonical JSON of p: compact, every field present
// (defaults included) in schema order, empty lists as [], no HTML
// escaping. Equal policies give equal bytes, so a hash of the result can
// serve as an ETag. An invalid policy is refused with a *[ValidationError].
func Marshal(p Policy) ([]byte, error) {
	if errs := p.Validate(); len(errs) > 0 {
		return nil, invalid(errs...)
	}
	f := &p.Features.Fix
	for _, s := range []*[]string{&f.TriggerLabels, &f.Registries, &f.DeniedPaths, &f.AllowedPaths, &p.Features.Review.SkipAuthors, &p.Features.Review.PathFilters} {
		if *s == nil {
			*s = []string{}
		}
	}
	for _, s := range []*[]string{&p.Features.SAST.DisabledRules, &p.Features.SAST.TestPaths, &p.Features.SAST.BYO} {
		if *s == nil {
			*s = []string{}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("policy.Marshal: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
