package c

// Seed is where b starts; b is scanned, c is not.
const Seed = 7
