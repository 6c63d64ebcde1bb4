package paging

// Pages is the number of pages needed for total items, per to a page.
func Pages(total, per int) int {
	if per <= 0 {
		return 0
	}
	return (total + per - 1) / per
}
