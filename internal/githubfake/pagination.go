package githubfake

import (
	"fmt"
	"strconv"
	"strings"
)

// GitHub's page sizes for list endpoints that take per_page.
const (
	defaultPerPage = 30
	maxPerPage     = 100
)

// paginate returns the page of list the request asks for (per_page, default
// 30, at most 100; page, from 1) and sets GitHub's Link header with the
// prev, next, last and first pages that exist. A list that fits on one page
// gets no Link header, as on GitHub. per_page is repeated in the links only
// when the client sent it.
func paginate[T any](c *call, list []T) []T {
	q := c.r.URL.Query()
	perPage, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || perPage < 1 {
		perPage = defaultPerPage
	}
	perPage = min(perPage, maxPerPage)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	last := max((len(list)+perPage-1)/perPage, 1)

	if last > 1 || page > 1 {
		link := func(p int, rel string) string {
			lq := c.r.URL.Query()
			lq.Set("page", strconv.Itoa(p))
			if lq.Has("per_page") {
				lq.Set("per_page", strconv.Itoa(perPage))
			}
			return fmt.Sprintf("<%s%s?%s>; rel=%q", c.s.URL, c.r.URL.EscapedPath(), lq.Encode(), rel)
		}
		var rels []string
		if page > 1 {
			rels = append(rels, link(page-1, "prev"))
		}
		if page < last {
			rels = append(rels, link(page+1, "next"), link(last, "last"))
		}
		if page > 1 {
			rels = append(rels, link(1, "first"))
		}
		c.header.Set("Link", strings.Join(rels, ", "))
	}

	start := (page - 1) * perPage
	if start >= len(list) {
		return []T{}
	}
	return list[start:min(start+perPage, len(list))]
}
