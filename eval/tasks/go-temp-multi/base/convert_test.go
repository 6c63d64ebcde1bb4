package temp

import "testing"

func TestCelsiusIdentity(t *testing.T) {
	if ToKelvin(1)-ToKelvin(0) != 1 {
		t.Fatal("a degree is a kelvin")
	}
}
