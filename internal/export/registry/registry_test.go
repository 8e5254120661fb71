package registry

import (
	"context"
	"testing"
)

func TestRegisterAndLookup(t *testing.T) {
	f := Factory(func(context.Context) (Exporter, error) { return nil, nil })
	Register("test-only", f)
	if _, ok := Lookup("test-only"); !ok {
		t.Fatal("registered factory not found")
	}
	if _, ok := Lookup("missing"); ok {
		t.Fatal("found an exporter nobody registered")
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a name twice did not panic")
		}
	}()
	Register("test-only", f)
}
