package events

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ip(i int) *int { return &i }

func TestPaginate(t *testing.T) {
	for name, tc := range map[string]struct {
		page, size, total, n int
		want                 Pagination
	}{
		// The one example of the original (shared/spec/NOTES.md).
		"the spec's example": {0, 10, 3, 3, Pagination{TotalResults: 3, Offset: 0, PageSize: 10, MaxVisible: 5, PagesBefore: 2,
			RangeStart: 1, RangeEnd: 3, FirstPage: true, LastPage: true, NumberOfPages: 1, VisiblePages: []int{}}},
		"first of many": {0, 10, 95, 10, Pagination{TotalResults: 95, PageSize: 10, MaxVisible: 5, PagesBefore: 2,
			RangeStart: 1, RangeEnd: 10, FirstPage: true, NumberOfPages: 10, NextPage: ip(1), VisiblePages: []int{0, 1, 2, 3, 4}}},
		"middle": {5, 10, 95, 10, Pagination{TotalResults: 95, Offset: 50, PageSize: 10, MaxVisible: 5, PagesBefore: 2,
			RangeStart: 51, RangeEnd: 60, NumberOfPages: 10, PreviousPage: ip(4), NextPage: ip(6), VisiblePages: []int{3, 4, 5, 6, 7}}},
		"last": {9, 10, 95, 5, Pagination{TotalResults: 95, Offset: 90, PageSize: 10, MaxVisible: 5, PagesBefore: 2,
			RangeStart: 91, RangeEnd: 95, LastPage: true, NumberOfPages: 10, PreviousPage: ip(8), VisiblePages: []int{5, 6, 7, 8, 9}}},
		"beyond the last": {12, 10, 95, 0, Pagination{TotalResults: 95, Offset: 120, PageSize: 10, MaxVisible: 5, PagesBefore: 2,
			LastPage: true, NumberOfPages: 10, PreviousPage: ip(9), VisiblePages: []int{}}},
		"nothing at all": {0, 20, 0, 0, Pagination{PageSize: 20, MaxVisible: 5, PagesBefore: 2, FirstPage: true, LastPage: true,
			VisiblePages: []int{}}},
	} {
		if d := cmp.Diff(tc.want, Paginate(tc.page, tc.size, tc.total, tc.n)); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
}
