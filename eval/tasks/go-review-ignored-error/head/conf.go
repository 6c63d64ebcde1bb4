package conf

import (
	"os"
	"strings"
)

// Defaults are the settings without a file.
func Defaults() map[string]string {
	settings := map[string]string{"mode": "fast"}
	return settings
}

// Load reads key=value lines over the defaults.
func Load(path string) map[string]string {
	settings := Defaults()
	data, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok {
			settings[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return settings
}
