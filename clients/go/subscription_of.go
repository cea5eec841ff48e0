package stateclient

import "reflect"

// subscriptionOf is the Subscription field of a decoded event (every generated event type has
// one); "" when it has none, and the caller reads the subscription from the params instead.
func subscriptionOf(ev Event) string {
	v := reflect.ValueOf(ev)
	if v.Kind() != reflect.Ptr || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return ""
	}
	f := v.Elem().FieldByName("Subscription")
	if !f.IsValid() || f.Kind() != reflect.String {
		return ""
	}
	return f.String()
}
