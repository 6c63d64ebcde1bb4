package demo

// Answer is 42.
func Answer() int { return 42 }
