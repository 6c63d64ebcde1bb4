package conf

// Defaults are the settings without a file.
func Defaults() map[string]string {
	d := map[string]string{"mode": "fast"}
	return d
}
