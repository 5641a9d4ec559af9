package chaos

import (
	"bufio"
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(monoLoopEnv) != "" {
		monoLoop()
	}
	goleak.VerifyTestMain(m,
		// toxiproxy v2.5.0's toxics send on their output without watching
		// for an interruption (toxics/noop.go and toxics/latency.go, Pipe):
		// when the toxic after one (the nemesis's cut, a timeout toxic)
		// stops reading while a chunk is in flight, it stays blocked after
		// the proxy is stopped. Seen in long campaigns (seeds 424242 and 1)
		// whose histories were clean.
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
		// The same at the other end of a link: its reader (link.go, read)
		// sends each chunk it reads from the client into the first toxic's
		// input channel (stream/io_chan.go, ChanWriter.Write) without
		// watching for an interruption; when that toxic has stopped reading,
		// the reader stays blocked after the proxy is stopped. Closing the
		// connection does not free it, so it can outlive a long campaign
		// that passed.
		goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanWriter).Write"),
	)
}

// monoLoopEnv makes the test binary a child that writes its CLOCK_MONOTONIC
// readings to stdout, one per line, until it is killed (see
// TestSignalStampsAfterEffect).
const monoLoopEnv = "ELECTOR_CHAOS_MONO_LOOP"

func monoLoop() {
	w := bufio.NewWriterSize(os.Stdout, 64)
	for {
		_, _ = w.WriteString(strconv.FormatInt(Mono(), 10) + "\n")
		_ = w.Flush()
	}
}
