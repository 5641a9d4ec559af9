package chaos

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// toxiproxy v2.5.0's toxics send on their output without watching
		// for an interruption (toxics/noop.go and toxics/latency.go, Pipe):
		// when the toxic after one (the nemesis's cut, a timeout toxic)
		// stops reading while a chunk is in flight, it stays blocked after
		// the proxy is stopped. Seen in long campaigns (seeds 424242 and 1)
		// whose histories were clean.
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
	)
}
