package state

import "testing"

// A merge that leaves no row keeps Go's difference between no list ("sessions": null) and an
// empty one ("sessions": []): empty when either side holds a list, none when neither does.
func TestMergeRowsKeepsNullApartFromEmpty(t *testing.T) {
	base := []Session{{Name: "x"}}
	if got, _ := mergeRows(base, []Session{}, nil); got == nil || len(got) != 0 {
		t.Errorf("mine emptied the list, theirs has none: %#v, want an empty list", got)
	}
	if got, _ := mergeRows(base, nil, []Session{}); got == nil || len(got) != 0 {
		t.Errorf("theirs emptied the list, mine has none: %#v, want an empty list", got)
	}
	if got, _ := mergeRows(base, nil, nil); got != nil {
		t.Errorf("neither side has a list: %#v, want none", got)
	}
}
