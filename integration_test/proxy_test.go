package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// startToxiproxy starts an in-process toxiproxy named name in front of
// target, stopped at the end of the test.
func startToxiproxy(t *testing.T, name, target string) *toxiproxy.Proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", target)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
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
