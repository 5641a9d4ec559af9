// Package toxileak lists the goroutines toxiproxy v2.5.0 (the newest
// release) can leave behind after its proxies are stopped, for the goleak
// checks of the packages that run it.
package toxileak

import "go.uber.org/goleak"

// Ignore are goleak options that ignore toxiproxy's stranded goroutines.
// Its toxics send on their output without watching for an interruption
// (toxics/noop.go and toxics/latency.go, Pipe): when the toxic after one
// (a cut, a timeout toxic) stops reading while a chunk is in flight, it
// stays blocked after the proxy is stopped. The same holds at the other end
// of a link: its reader (link.go, read) sends each chunk it reads from the
// client into the first toxic's input channel (stream/io_chan.go,
// ChanWriter.Write), and closing the connection does not free it. Both
// outlive a run whose histories were clean.
var Ignore = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
	goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanWriter).Write"),
}
