package chaos

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// toxiproxy v2.5.0's noop toxic sends on its output without
		// watching for an interruption (toxics/noop.go, NoopToxic.Pipe):
		// when the toxic after it (the nemesis's cut, a timeout toxic)
		// stops reading while a chunk is in flight, it stays blocked after
		// the proxy is stopped. Seen once in a long campaign (seed 424242).
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"),
	)
}
