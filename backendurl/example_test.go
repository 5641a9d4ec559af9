package backendurl_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/backendurl"
)

// A Mux of one's own, with a scheme for the in-memory backend, refuses the
// schemes it does not know and names those it does.
func ExampleMux_Register() {
	store := memory.New()
	defer store.Close()
	var mux backendurl.Mux // the zero value is ready to use
	mux.Register("mem", backendurl.OpenerFunc(func(context.Context, *url.URL) (backend.Backend, io.Closer, error) {
		b := store.Peer()
		return b, b, nil
	}))

	b, closer, err := mux.Open(context.Background(), "mem://")
	if err != nil {
		panic(err)
	}
	defer closer.Close()
	_, err = b.Leader(context.Background(), "jobs")
	fmt.Println("no leader yet:", errors.Is(err, backend.ErrNoLeader))

	_, _, err = mux.Open(context.Background(), "redis://127.0.0.1:6379")
	fmt.Println(err)
	// Output:
	// no leader yet: true
	// backendurl: "redis://127.0.0.1:6379": unknown scheme "redis"; want one of mem
}

// Open refuses a parameter the scheme does not have, and lists those it has.
func ExampleOpen() {
	_, _, err := backendurl.Open(context.Background(), "etcd://10.0.0.1:2379,10.0.0.2:2379?ttl=10s")
	fmt.Println(err)
	// Output:
	// backendurl: "etcd://10.0.0.1:2379,10.0.0.2:2379?ttl=10s": unknown query parameter "ttl"; want one of ca, cert, cleanup_timeout, dial_timeout, drift_factor, insecure_skip_verify, key, prefix, request_timeout, server_name
}
