package policy

import (
	"reflect"
	"strings"
)

// Change is one field a policy update changed, for the audit entry. Old
// and New are plain JSON values: string, int64, bool or []string (never
// nil). Commands appear in full; validation refuses those that look like
// credentials.
type Change struct {
	Path string `json:"path"` // JSON pointer, as in FieldError
	Old  any    `json:"old"`
	New  any    `json:"new"`
}

// Diff lists the fields that differ between old and new, in schema order.
// Lists are compared and reported whole; an empty and a nil list are equal.
func Diff(old, new Policy) []Change {
	var out []Change
	diff(reflect.ValueOf(old), reflect.ValueOf(new), "", &out)
	return out
}

func diff(a, b reflect.Value, p string, out *[]Change) {
	if a.Kind() == reflect.Struct {
		for i := range a.NumField() {
			name, _, _ := strings.Cut(a.Type().Field(i).Tag.Get("json"), ",")
			diff(a.Field(i), b.Field(i), p+"/"+name, out)
		}
		return
	}
	av, bv := plain(a), plain(b)
	if !reflect.DeepEqual(av, bv) {
		*out = append(*out, Change{Path: p, Old: av, New: bv})
	}
}

// plain converts a leaf of the schema to a plain JSON value.
func plain(v reflect.Value) any {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int64:
		return v.Int()
	case reflect.Slice:
		s := make([]string, v.Len())
		for i := range s {
			s[i] = v.Index(i).String()
		}
		return s
	}
	panic("policy: no diff for " + v.Type().String())
}
