// Package bench holds Quavon's performance benchmarks. Each one measures
// against a baseline in the same run and reports the ratio, so numbers are
// comparable across machines:
//
//	make bench        (or: scripts/test -run '^$' -bench . ./bench/...)
package bench
