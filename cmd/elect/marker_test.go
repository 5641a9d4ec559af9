//go:build unix

package main

import (
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOldOnlyReplicaWaitsBehindMarker checks what docs/migration.md says
// of a replica still on the old URL alone once step 3 has written the
// marker: it waits behind the marker, silently (no "campaign failed"
// warning), never runs its command, and `elect status` on the old URL names
// the marker as the leader.
func TestOldOnlyReplicaWaitsBehindMarker(t *testing.T) {
	old, nw := backendURL(t, "redis", nil), backendURL(t, "etcd", nil)
	name := election(t)
	phaseNew := "migrate+new://?" + url.Values{"old": {old}, "new": {nw}}.Encode()
	// Step 3: a phase-new replica leads once, which writes the marker.
	if code, out := runElect(t, nil, "run", "--once", "--ttl=1s", "--hold=2s", "--wait=2s", "--backend="+phaseNew, "--election="+name, "--", "true"); code != 0 {
		t.Fatalf("phase new replica: exit %d\n%s", code, out)
	}
	p := startElect(t, "old-only", nil, "run", "--ttl=1s", "--backend="+old, "--election="+name, "--", "sh", "-c", "echo COMMAND RAN; sleep 60")
	time.Sleep(4 * time.Second) // four TTLs of an old-only replica campaigning behind the marker
	code, status := runElect(t, nil, "status", "--backend="+old, "--election="+name)
	if code != 0 || !regexp.MustCompile(`migrated-to-etcd`).MatchString(status) {
		t.Errorf("elect status on the old URL: exit %d\n%s\nwant 0 and the marker migrated-to-etcd as the leader", code, status)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("old-only replica: exit %d after SIGTERM; want 0", code)
	}
	out := p.out.String()
	if strings.Contains(out, "COMMAND RAN") || strings.Contains(out, "campaign failed") || strings.Contains(out, "level=WARN") {
		t.Errorf("old-only replica behind the marker: want it waiting silently, its command not run; output:\n%s", out)
	}
}
