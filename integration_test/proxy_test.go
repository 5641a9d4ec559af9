package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// startToxiproxy starts an in-process toxiproxy named name in front of
// target, stopped at the end of the test.
func startToxiproxy(t testing.TB, name, target string) *toxiproxy.Proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", target)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// delayed returns, for each of targets, the address of an in-process
// toxiproxy that delays every reply by d, as a store on another host
// would.
func delayed(tb testing.TB, name string, targets []string, d time.Duration) []string {
	tb.Helper()
	addrs := make([]string, len(targets))
	for i, target := range targets {
		p := startToxiproxy(tb, fmt.Sprintf("%s-%d", name, i), target)
		toxic := fmt.Sprintf(`{"name":"delay","type":"latency","stream":"downstream","toxicity":1,"attributes":{"latency":%d}}`, d.Milliseconds())
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
			tb.Fatal(err)
		}
		addrs[i] = p.Listen
	}
	return addrs
}

// cutLinks makes proxy swallow everything in both directions, as a network
// partition would (no FIN, no RST), and returns a heal function that may be
// called any number of times; the test heals at its end in any case.
func cutLinks(t *testing.T, proxy *toxiproxy.Proxy) (heal func()) {
	t.Helper()
	for _, stream := range []string{"upstream", "downstream"} {
		toxic := fmt.Sprintf(`{"name":"cut-%s","type":"timeout","stream":%q,"toxicity":1,"attributes":{"timeout":0}}`, stream, stream)
		if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
			t.Fatal(err)
		}
	}
	healed := false
	heal = func() {
		if !healed {
			healed = true
			proxy.Toxics.ResetToxics(context.Background())
		}
	}
	t.Cleanup(heal)
	return heal
}
