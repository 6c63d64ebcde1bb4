package temp

// ToKelvin converts degrees Celsius to kelvin.
func ToKelvin(c float64) float64 { return c + ZeroCelsiusInKelvin }

// ToFahrenheit converts degrees Celsius to Fahrenheit.
func ToFahrenheit(c float64) float64 { return c*9/5 - 32 }
