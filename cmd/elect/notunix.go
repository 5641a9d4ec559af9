//go:build !unix

package main

import (
	"fmt"
	"os"
)

// main explains that elect needs process groups and POSIX signals.
func main() {
	fmt.Fprintln(os.Stderr, "elect: this system is not supported; elect needs Unix process groups and signals")
	os.Exit(125)
}
