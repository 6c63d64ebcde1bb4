module github.com/quavon/quavon

go 1.26.8

require (
	github.com/gowebpki/jcs v1.0.2
	github.com/valkey-io/valkey-go v1.0.79
)

require golang.org/x/sys v0.47.0 // indirect
