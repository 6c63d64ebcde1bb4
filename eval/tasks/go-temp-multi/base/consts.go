package temp

// ZeroCelsiusInKelvin is 0 °C in kelvin.
const ZeroCelsiusInKelvin = 273.0
