//go:build race

package elector

// raceEnabled reports whether the race detector is on: it doubles the stack
// the runtime reserves, which changes when stacks shrink.
const raceEnabled = true
