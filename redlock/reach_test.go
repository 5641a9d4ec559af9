package redlock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
)

// TestCampaignNamesNodeCauses: a campaign over nodes that refuse
// connections fails with an error that names each node with its last dial
// error, not a bare "context deadline exceeded". Port 1 on the loopback
// refuses at once on any test machine.
func TestCampaignNamesNodeCauses(t *testing.T) {
	t.Parallel()
	b, c, err := backendurl.Open(t.Context(), "redis://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3?request_timeout=50ms")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cand := backend.Candidate{Election: "causes", Identity: "me", TTL: time.Second}
	// go-redis dials in the background: the first round may end before the
	// first dial does. Every campaign fails; ask until the causes are in.
	var last error
	for ctx.Err() == nil {
		_, last = b.Campaign(ctx, cand)
		if last != nil && strings.Count(last.Error(), "connection refused") == 3 {
			break
		}
	}
	for _, want := range []string{"need 2", "127.0.0.1:1: ", "127.0.0.1:2: ", "127.0.0.1:3: ", "connection refused"} {
		if last == nil || !strings.Contains(last.Error(), want) {
			t.Fatalf("Campaign over three refusing nodes: got %v, want an error containing %q: each node's cause", last, want)
		}
	}
}

// TestSlowNodeHintsRequestTimeout: a node that accepts connections but is slower
// than RequestTimeout is described with the hint to raise request_timeout.
func TestSlowNodeHintsRequestTimeout(t *testing.T) {
	t.Parallel()
	b := &Backend{clients: nil, cfg: config{requestTimeout: 100 * time.Millisecond}}
	b.clients = append(b.clients, nil)
	got := b.failure(0, context.DeadlineExceeded, b.cfg.requestTimeout)
	if want := "node 0: no reply within RequestTimeout 100ms (raise RequestTimeout, request_timeout in a URL"; !strings.HasPrefix(got, want) {
		t.Fatalf("failure(0, DeadlineExceeded): got %q, want it to start %q", got, want)
	}
}
