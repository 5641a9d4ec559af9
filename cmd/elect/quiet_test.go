package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2"
)

// TestLibrariesLogAtDebug: what client-go logs on its own (through klog)
// reaches elect's log only at --log-level=debug, marked with its
// component, and never at the default level, where elect reports failures
// itself; its verbose lines (feature gates, request bodies) never do.
func TestLibrariesLogAtDebug(t *testing.T) {
	prev := libraryLog.Load()
	t.Cleanup(func() { libraryLog.Store(prev) })
	for _, level := range []string{"info", "debug"} {
		var out bytes.Buffer
		quietLibraries(newLogger(&out, level, "text"))
		klog.ErrorS(errors.New("context deadline exceeded"), "Unexpected error when reading response body")
		klog.Background().V(1).Info("Feature gate default state", "feature", "WatchListClient")
		klog.Background().V(8).Info("Response Body", "body", "00000000  6b 38 73 00")
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
			if strings.Contains(got, "Feature gate") || strings.Contains(got, "Response Body") {
				t.Errorf("--log-level=debug: client-go's verbose lines (klog V(1), V(8)) reached the log:\n%s", got)
			}
		}
	}
}

// TestQuietWhileClientsLog: an elect run that sets where the libraries'
// lines go, while another run's clients in the same process log (as the
// tests run many), writes no global those clients read (under -race).
func TestQuietWhileClientsLog(t *testing.T) {
	prev := libraryLog.Load()
	t.Cleanup(func() { libraryLog.Store(prev) })
	quietLibraries(newLogger(io.Discard, "debug", "text"))
	stop, started := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			if i == 1 {
				close(started)
			}
			select {
			case <-stop:
				return
			default:
				klog.Background().Error(errors.New("connection refused"), "Failed to watch")
			}
		}
	})
	<-started
	var last *bytes.Buffer // each run logs to a buffer of its own
	for i := range 100 {
		last = new(bytes.Buffer)
		level := []string{"info", "debug"}[i%2]
		quietLibraries(newLogger(last, level, "text"))
	}
	close(stop)
	wg.Wait()
	klog.ErrorS(errors.New("connection refused"), "after the last run set the log")
	klog.Flush()
	if !strings.Contains(last.String(), "after the last run set the log") {
		t.Errorf("the last run's log (debug) lacks client-go's line:\n%s", last.String())
	}
}
