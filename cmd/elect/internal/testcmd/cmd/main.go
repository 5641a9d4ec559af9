//go:build unix

// Command testcmd is [testcmd.Main] as a program, which elect's tests
// build and have elect run.
package main

import "github.com/leaderkit/elector/cmd/elect/internal/testcmd"

func main() { testcmd.Main() }
