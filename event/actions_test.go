package event_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/loomkit/loom/event"
)

// TestActionsKnowEveryField sets each field of Actions in turn and checks
// that IsZero sees it and Merge carries it, so that a field added later
// cannot be forgotten by either.
func TestActionsKnowEveryField(t *testing.T) {
	typ := reflect.TypeFor[event.Actions]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		var a event.Actions
		v := reflect.ValueOf(&a).Elem().Field(i)
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(true)
		case reflect.String:
			v.SetString("x")
		case reflect.Map:
			m := reflect.MakeMap(v.Type())
			m.SetMapIndex(reflect.ValueOf("k"), reflect.Zero(v.Type().Elem()))
			v.Set(m)
		case reflect.Pointer:
			v.Set(reflect.ValueOf(&event.Compaction{Start: time.Unix(1, 0)}))
		case reflect.Interface:
			v.Set(reflect.ValueOf("x"))
		case reflect.Slice:
			v.Set(reflect.ValueOf([]any{"x"}))
		default:
			t.Fatalf("field %s: kind %s not covered by this test", f.Name, v.Kind())
		}
		if a.IsZero() {
			t.Errorf("IsZero misses field %s", f.Name)
		}
		var dst event.Actions
		dst.Merge(&a)
		if !reflect.DeepEqual(dst, a) {
			t.Errorf("Merge drops field %s", f.Name)
		}
		if got, want := a.IsCheckpoint(), f.Name == "AgentState" || f.Name == "EndOfAgent"; got != want {
			t.Errorf("IsCheckpoint with only %s = %v", f.Name, got)
		}
	}
	var zero event.Actions
	if !zero.IsZero() || zero.IsCheckpoint() {
		t.Error("the zero Actions")
	}
}
