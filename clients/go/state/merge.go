package state

import (
	"fmt"
	"log"
	"reflect"
)

// A State's unsaved edits (made in place on its exported fields, or by a mutator that is
// being retried) are merged with what other writers committed since the document the State
// was last built from: three ways, base (that document), mine (the fields) and theirs (the
// served document now). Top-level fields merge one by one; session rows merge by name, and
// within a row field by field. What only one side changed is taken from that side; what both
// changed to different values is a conflict: this State's value wins, as Go's Save writes its
// memory, and the conflict goes to the standard logger, so it is never silent. A row one side
// removed and the other changed is kept with the changes (removing it would drop a change).

// conflict is one field both sides changed to different values.
type conflict struct {
	row         string // "" for a top-level field
	field       string
	mine, their interface{}
}

func (c conflict) String() string {
	where := c.field
	if c.row != "" {
		where = fmt.Sprintf("session %q field %s", c.row, c.field)
	}
	return fmt.Sprintf("%s: kept this State's %v over another writer's %v", where, c.mine, c.their)
}

// merge is the three-way merge. The result shares theirs' rows where it takes them whole (the
// caller's own copy) and copies mine's.
func merge(base, mine, theirs document) (document, []conflict) {
	out := theirs
	var conflicts []conflict
	top := func(field string, b, m, t interface{}, take func()) {
		if reflect.DeepEqual(m, b) {
			return
		}
		if !reflect.DeepEqual(t, b) && !reflect.DeepEqual(t, m) {
			conflicts = append(conflicts, conflict{field: field, mine: m, their: t})
		}
		take()
	}
	top("home", base.Home, mine.Home, theirs.Home, func() { out.Home = mine.Home })
	top("repo", base.Repo, mine.Repo, theirs.Repo, func() { out.Repo = mine.Repo })
	top("workspace", base.Workspace, mine.Workspace, theirs.Workspace, func() { out.Workspace = mine.Workspace })
	top("source", base.Source, mine.Source, theirs.Source, func() { out.Source = mine.Source })
	top("statusMessageID", base.StatusMessageID, mine.StatusMessageID, theirs.StatusMessageID, func() { out.StatusMessageID = mine.StatusMessageID })
	top("instanceID", base.InstanceID, mine.InstanceID, theirs.InstanceID, func() { out.InstanceID = mine.InstanceID })
	if !sameSessions(mine.Sessions, base.Sessions) {
		var c []conflict
		out.Sessions, c = mergeRows(base.Sessions, mine.Sessions, theirs.Sessions)
		conflicts = append(conflicts, c...)
	}
	return out, conflicts
}

// rowKey names a row: its name and which row of that name it is (a list edited in place may
// hold a name twice).
type rowKey struct {
	name string
	nth  int
}

func keyed(rows []Session) ([]rowKey, map[rowKey]*Session) {
	keys := make([]rowKey, len(rows))
	at := make(map[rowKey]*Session, len(rows))
	seen := map[string]int{}
	for i := range rows {
		k := rowKey{rows[i].Name, seen[rows[i].Name]}
		seen[rows[i].Name]++
		keys[i] = k
		at[k] = &rows[i]
	}
	return keys, at
}

// mergeRows merges the session lists: theirs' rows in theirs' order, each merged with mine's
// edits; rows mine added after them, in mine's order; rows mine removed (unchanged by theirs)
// and rows theirs removed (unchanged by mine) left out.
func mergeRows(base, mine, theirs []Session) ([]Session, []conflict) {
	_, b := keyed(base)
	mineKeys, m := keyed(mine)
	theirKeys, t := keyed(theirs)
	var out []Session
	var conflicts []conflict
	for _, k := range theirKeys {
		tr, br, mr := t[k], b[k], m[k]
		switch {
		case br == nil && mr == nil: // theirs added it
			out = append(out, *tr)
		case br == nil: // both added a row of this name
			row, c := mergeRow(k.name, &Session{}, mr, tr)
			out = append(out, row)
			conflicts = append(conflicts, c...)
		case mr == nil: // mine removed it
			if !sameSession(tr, br) {
				out = append(out, *tr) // theirs changed it since: the change is kept
			}
		default:
			row, c := mergeRow(k.name, br, mr, tr)
			out = append(out, row)
			conflicts = append(conflicts, c...)
		}
	}
	for _, k := range mineKeys {
		if t[k] != nil {
			continue
		}
		mr, br := m[k], b[k]
		if br != nil && sameSession(mr, br) {
			continue // theirs removed it, mine did not change it
		}
		out = append(out, copySession(*mr)) // mine added it, or changed a row theirs removed
	}
	if out == nil && (mine != nil || theirs != nil) {
		out = []Session{}
	}
	return out, conflicts
}

// mergeRow merges one row field by field.
func mergeRow(name string, base, mine, theirs *Session) (Session, []conflict) {
	out := copySession(*theirs)
	bv, mv, tv := reflect.ValueOf(base).Elem(), reflect.ValueOf(mine).Elem(), reflect.ValueOf(theirs).Elem()
	ov := reflect.ValueOf(&out).Elem()
	var conflicts []conflict
	for i := 0; i < bv.NumField(); i++ {
		bf, mf, tf := bv.Field(i).Interface(), mv.Field(i).Interface(), tv.Field(i).Interface()
		if reflect.DeepEqual(mf, bf) {
			continue
		}
		if !reflect.DeepEqual(tf, bf) && !reflect.DeepEqual(tf, mf) {
			conflicts = append(conflicts, conflict{row: name, field: reflect.TypeOf(*base).Field(i).Name, mine: mf, their: tf})
		}
		ov.Field(i).Set(mv.Field(i))
	}
	return copySession(out), conflicts
}

// reportConflicts logs what a merge kept over another writer's change.
func reportConflicts(path string, conflicts []conflict) {
	for _, c := range conflicts {
		log.Print("state: " + path + ": both this State and another writer changed " + c.String())
	}
}
