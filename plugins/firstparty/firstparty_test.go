package firstparty

import "testing"

// Each factory makes a fresh plugin named as plugins.yaml names it.
func TestFactories(t *testing.T) {
	if len(Factories) != 6 {
		t.Errorf("%d factories", len(Factories))
	}
	for name, f := range Factories {
		a, b := f(), f()
		if a == b || a.Manifest().Name != name {
			t.Errorf("%s: manifest %q, fresh %v", name, a.Manifest().Name, a != b)
		}
	}
}
