package sqlstore

import "testing"

// TestEventShapes: an in-process engine's batch is cut into a few shapes,
// whose statements are cached however many parameters they have; a batch
// of another size is not a shape and is not cached.
func TestEventShapes(t *testing.T) {
	for n, want := range map[int][]int{1: {1}, 3: {1, 1, 1}, 4: {4}, 21: {16, 4, 1}, 64: {64}, 150: {64, 64, 16, 4, 1, 1}} {
		var got []int
		for left := n; left > 0; left -= got[len(got)-1] {
			got = append(got, eventShape(left))
		}
		if len(got) != len(want) {
			t.Fatalf("%d rows cut into %v, want %v", n, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%d rows cut into %v, want %v", n, got, want)
			}
		}
	}
	for _, how := range eventInserts {
		for _, n := range eventShapes {
			if !cacheable(eventInsertSQL(n, how), n*eventParams) {
				t.Errorf("the insert of %d rows (%+v) is not cached", n, how)
			}
		}
		if cacheable(eventInsertSQL(5, how), 5*eventParams) {
			t.Errorf("an insert of 5 rows, not a shape, is cached")
		}
	}
}
