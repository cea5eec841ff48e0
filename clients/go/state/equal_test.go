package state

import (
	"math"
	"reflect"
	"testing"

	stateclient "github.com/herrscher/herrscher-state/clients/go"
)

// changedField returns v with field i set to a value its zero value is not equal to.
func changedField(t *testing.T, v reflect.Value, i int) {
	t.Helper()
	f := v.Field(i)
	switch f.Kind() {
	case reflect.String:
		f.SetString("x")
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Int:
		f.SetInt(1)
	case reflect.Uint64:
		f.SetUint(1)
	case reflect.Float64:
		f.SetFloat(1)
	case reflect.Slice:
		f.Set(reflect.ValueOf([]string{"x"}))
	case reflect.Struct:
		f.Set(reflect.ValueOf(HomeRef{ID: "x"}))
	default:
		t.Fatalf("field %s: kind %s is not covered here", v.Type().Field(i).Name, f.Kind())
	}
}

// Every field of a row and of the document takes part in the compare, as it does in
// reflect.DeepEqual (a field added to Session without its compare fails here).
func TestSameSessionAndSameDocumentCompareEveryField(t *testing.T) {
	var zero Session
	typ := reflect.TypeOf(zero)
	for i := 0; i < typ.NumField(); i++ {
		var s Session
		changedField(t, reflect.ValueOf(&s).Elem(), i)
		if sameSession(&s, &zero) || sameSession(&zero, &s) {
			t.Errorf("sameSession misses field %s", typ.Field(i).Name)
		}
		if reflect.DeepEqual(s, zero) {
			t.Fatalf("field %s: the changed value equals the zero one", typ.Field(i).Name)
		}
	}
	var zd document
	dt := reflect.TypeOf(zd)
	for i := 0; i < dt.NumField(); i++ {
		var d document
		if dt.Field(i).Name == "Sessions" {
			d.Sessions = []Session{}
		} else {
			changedField(t, reflect.ValueOf(&d).Elem(), i)
		}
		if sameDocument(&d, &zd) || sameDocument(&zd, &d) {
			t.Errorf("sameDocument misses field %s", dt.Field(i).Name)
		}
	}
}

// Where DeepEqual tells nil from empty, and NaN from itself, so does the compare.
func TestSameSessionAgreesWithDeepEqual(t *testing.T) {
	rows := []Session{
		{Name: "a"},
		{Name: "a", Gateways: []string{}},
		{Name: "a", Gateways: []string{"discord"}},
		{Name: "a", Gateways: []string{"discord", "slack"}},
		{Name: "a", Participants: []string{"u1"}},
		{Name: "a", CostCap: math.NaN()},
		{Name: "a", CostCap: 1.5, TokenCap: 7},
	}
	for i := range rows {
		for j := range rows {
			a, b := rows[i], rows[j]
			if got, want := sameSession(&a, &b), reflect.DeepEqual(a, b); got != want {
				t.Errorf("rows %d and %d: sameSession %v, DeepEqual %v", i, j, got, want)
			}
		}
	}
	docs := []document{{}, {Sessions: []Session{}}, {Sessions: rows[:1]}, {Sessions: rows[1:2]}, {Sessions: rows[:2]}}
	for i := range docs {
		for j := range docs {
			if got, want := sameDocument(&docs[i], &docs[j]), reflect.DeepEqual(docs[i], docs[j]); got != want {
				t.Errorf("documents %d and %d: sameDocument %v, DeepEqual %v", i, j, got, want)
			}
		}
	}
}

// The wire row and Session are one shape: the conversion in fromWire compiles only while their
// fields match, and here their JSON names must too; every field comes across.
func TestFromWireIsTheSameRow(t *testing.T) {
	ours, wire := reflect.TypeOf(Session{}), reflect.TypeOf(stateclient.Session{})
	if ours.NumField() != wire.NumField() {
		t.Fatalf("Session has %d fields, the wire row %d", ours.NumField(), wire.NumField())
	}
	for i := 0; i < ours.NumField(); i++ {
		a, b := ours.Field(i), wire.Field(i)
		if a.Name != b.Name || a.Tag.Get("json") != b.Tag.Get("json") {
			t.Errorf("field %d: %s %q here, %s %q on the wire", i, a.Name, a.Tag.Get("json"), b.Name, b.Tag.Get("json"))
		}
		var w stateclient.Session
		changedField(t, reflect.ValueOf(&w).Elem(), i)
		got := reflect.ValueOf(fromWire(w)).Field(i).Interface()
		if !reflect.DeepEqual(got, reflect.ValueOf(w).Field(i).Interface()) {
			t.Errorf("fromWire drops %s: %v", a.Name, got)
		}
	}
}
