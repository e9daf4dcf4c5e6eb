package appliance

import (
	"reflect"
	"testing"
)

// TestBrokerFieldCount keeps Broker a handful of named groups (issue 39:
// at most 12 fields), so that new state goes where it belongs instead of
// onto the node's struct.
func TestBrokerFieldCount(t *testing.T) {
	if n := reflect.TypeFor[Broker]().NumField(); n > 12 {
		t.Fatalf("Broker has %d fields, want at most 12: put the new state in the group it belongs to", n)
	}
}
