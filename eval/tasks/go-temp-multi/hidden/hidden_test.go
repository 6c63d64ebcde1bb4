package temp

import (
	"math"
	"testing"
)

func TestKelvin(t *testing.T) {
	if got := ToKelvin(0); math.Abs(got-273.15) > 1e-9 {
		t.Fatalf("ToKelvin(0) = %v", got)
	}
}

func TestFahrenheit(t *testing.T) {
	if got := ToFahrenheit(100); got != 212 {
		t.Fatalf("ToFahrenheit(100) = %v", got)
	}
}
