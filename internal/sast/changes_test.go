package sast

import (
	"slices"
	"testing"
)

func TestChangedLinesContains(t *testing.T) {
	t.Parallel()
	c := ChangedLines{"x": {{10, 12}, {30, 30}}}
	tests := []struct {
		path            string
		start, end, ctx int
		want            bool
	}{
		{"x", 10, 10, 0, true},
		{"x", 12, 12, 0, true},
		{"x", 13, 13, 0, false},
		{"x", 13, 13, 1, true},
		{"x", 7, 7, 3, true},
		{"x", 6, 6, 3, false},
		{"x", 1, 40, 0, true}, // a multi-line finding spanning a change
		{"x", 31, 33, 0, false},
		{"x", 33, 35, 3, true},
		{"y", 10, 10, 100, false},
	}
	for _, tt := range tests {
		if got := c.Contains(tt.path, tt.start, tt.end, tt.ctx); got != tt.want {
			t.Errorf("Contains(%s, %d, %d, %d) = %v", tt.path, tt.start, tt.end, tt.ctx, got)
		}
	}
}

func TestChangedLineRanges(t *testing.T) {
	t.Parallel()
	utf16le := func(s string) []byte {
		out := []byte{0xFF, 0xFE}
		for _, r := range s {
			out = append(out, byte(r), 0)
		}
		return out
	}
	tests := []struct {
		name       string
		base, head []byte
		want       []LineRange
	}{
		{"new file", nil, []byte("a\nb\n"), []LineRange{{1, 2}}},
		{"new file without final newline", nil, []byte("a\nb"), []LineRange{{1, 2}}},
		{"empty head", []byte("a\n"), []byte{}, nil},
		{"same", []byte("a\nb\n"), []byte("a\nb\n"), nil},
		{"one line changed", []byte("a\nb\nc\n"), []byte("a\nB\nc\n"), []LineRange{{2, 2}}},
		{"lines inserted", []byte("a\nc\n"), []byte("a\nx\ny\nc\n"), []LineRange{{2, 3}}},
		{"only a deletion", []byte("a\nb\nc\n"), []byte("a\nc\n"), nil},
		// git would call these binary (a NUL byte) and report no line.
		{"NUL bytes", []byte("a\x00\nb\n"), []byte("a\x00\nb\nevil()\n"), []LineRange{{3, 3}}},
		// A lone CR ends no Quavon line: the file is one line, and it changed.
		{"lone CR", []byte("a\rb\r"), []byte("a\rb\revil()\r"), []LineRange{{1, 1}}},
		{"CRLF", []byte("a\r\nb\r\n"), []byte("a\r\nb\r\nc\r\n"), []LineRange{{3, 3}}},
		{"CRLF to LF changes every line", []byte("a\r\nb\r\n"), []byte("a\nb\n"), []LineRange{{1, 2}}},
		// UTF-16 with a byte order mark is compared as text.
		{"UTF-16", utf16le("a\nb\n"), utf16le("a\nb\nevil()\n"), []LineRange{{3, 3}}},
		{"UTF-16 re-encoded as UTF-8", utf16le("a\nb\n"), []byte("a\nb\nc\n"), []LineRange{{3, 3}}},
		{"no final newline, then one", []byte("a\nb"), []byte("a\nb\n"), []LineRange{{2, 2}}},
	}
	for _, tt := range tests {
		got := ChangedLineRanges(tt.base, tt.head)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestLineMap(t *testing.T) {
	t.Parallel()
	// Quavon's lines: 1 "a\rb\n", 2 "c\u2028d\n", 3 "e".
	text := []byte("a\rb\nc\u2028d\ne")
	tests := []struct {
		terms       Terminators
		tool, ours  int
		exact, okay bool
	}{
		{LinesLF, 1, 1, true, true},
		{LinesLF, 3, 3, true, true},
		{LinesLF, 4, 0, false, false},
		{LinesPython, 2, 1, false, true}, // "b" after the lone CR
		{LinesPython, 3, 2, true, true},
		{LinesPython, 4, 3, true, true},
		{LinesJS, 4, 2, false, true}, // "d" after U+2028
		{LinesJS, 5, 3, true, true},
		{LinesJS, 6, 0, false, false},
	}
	for _, tt := range tests {
		ours, exact, ok := newLineMap(text, tt.terms, "").line(tt.tool)
		if ours != tt.ours || exact != tt.exact || ok != tt.okay {
			t.Errorf("terms %d line %d: %d %v %v, want %d %v %v", tt.terms, tt.tool, ours, exact, ok, tt.ours, tt.exact, tt.okay)
		}
	}
}

func TestPythonNumbering(t *testing.T) {
	t.Parallel()
	for src, unmappable := range map[string]bool{
		"import os\n":                                               false,
		"# -*- coding: latin-1 -*-\nx = 1\n":                        false,
		"#!/usr/bin/env python\n# coding=utf_8\n":                   false,
		"# coding: utf-7\n+AAo-import os\n":                         true,
		"#!/bin/python\n# vim: set fileencoding=unicode_escape :\n": true,
		"x = 1\n# coding: utf-7\n":                                  false, // line 1 is code: no cookie on line 2
	} {
		_, why := pythonNumbering([]byte(src))
		if (why != "") != unmappable {
			t.Errorf("%q: %q", src, why)
		}
	}
}
