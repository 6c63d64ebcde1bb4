package main

import "missing.example/dep"

func main() {
	dep.Run(undefinedThing)
}
