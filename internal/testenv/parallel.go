package testenv

import (
	"flag"
	"strconv"
)

// DefaultParallel makes n how many of a test binary's parallel tests run at
// once, unless its command line sets -parallel (go test's own default is
// GOMAXPROCS). Tests that wait on servers and timers rather than on a CPU
// gain from more than the machine has cores. Call it from TestMain before
// m.Run.
func DefaultParallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic("testenv: " + err.Error())
		}
	}
}
