package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// TestLibrariesLogAtDebug: what client-go logs on its own (through klog)
// reaches elect's log only at --log-level=debug, marked with its
// component, and never at the default level, where elect reports failures
// itself.
func TestLibrariesLogAtDebug(t *testing.T) {
	t.Cleanup(func() { klog.ClearLogger() })
	for _, level := range []string{"info", "debug"} {
		var out bytes.Buffer
		quietLibraries(newLogger(&out, level, "text"))
		klog.ErrorS(errors.New("context deadline exceeded"), "Unexpected error when reading response body")
		klog.Flush()
		got := out.String()
		switch level {
		case "info":
			if got != "" {
				t.Errorf("--log-level=info: the libraries' lines reached the log:\n%s", got)
			}
		case "debug":
			if !strings.Contains(got, "Unexpected error when reading response body") || !strings.Contains(got, "component=client-go") || !strings.Contains(got, "level=DEBUG") {
				t.Errorf("--log-level=debug: want client-go's line at DEBUG with its component, got:\n%s", got)
			}
		}
	}
}
