package memory

import (
	"context"
	"io"
	"net/url"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
)

// Opener returns a backendurl.Opener that opens every URL of the scheme it
// is registered for (any host, path and query) as a new [Backend.Peer] of
// b's store: in-process "separate clients", for tests and demos of code that
// takes a backend URL.
//
//	backendurl.Register("mem", store.Opener())
//	b, closer, err := backendurl.Open(ctx, "mem://")
func (b *Backend) Opener() backendurl.Opener {
	return backendurl.OpenerFunc(func(context.Context, *url.URL) (backend.Backend, io.Closer, error) {
		p := b.Peer()
		return p, p, nil
	})
}
