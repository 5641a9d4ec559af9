package chaos

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Fence is the protected resource: an HTTP store that accepts a write
// (POST /write?proc=P&token=T[&key=K]) only when its token is at least the
// highest token it has accepted for key K (one resource per partition or
// per migration; "" for the single election), and records every accepted and refused write in a
// [History]. It knows nothing of the driver under test: it is what an
// application's database with a token check would be.
type Fence struct {
	h    *History
	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu      sync.Mutex
	highest map[string]uint64 // key → highest token accepted
}

// StartFence starts a Fence on a free port of 127.0.0.1 that records into h.
func StartFence(h *History) (*Fence, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Fence{h: h, ln: ln, done: make(chan struct{}), highest: map[string]uint64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /write", f.write)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(f.done)
		if err := f.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return f, nil
}

// URL returns the Fence's base URL.
func (f *Fence) URL() string { return "http://" + f.ln.Addr().String() }

// Close stops the Fence and waits for its server goroutine.
func (f *Fence) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := f.srv.Shutdown(ctx)
	<-f.done
	return err
}

func (f *Fence) write(w http.ResponseWriter, r *http.Request) {
	token, err := strconv.ParseUint(r.URL.Query().Get("token"), 10, 64)
	if err != nil || token == 0 {
		http.Error(w, "bad token", http.StatusBadRequest)
		return
	}
	proc, key := r.URL.Query().Get("proc"), r.URL.Query().Get("key")
	f.mu.Lock()
	ok := token >= f.highest[key]
	if ok {
		f.highest[key] = token
	}
	// Stamped under the lock, so the history orders writes as the store
	// applied them.
	f.h.Add(Event{Mono: Mono(), Proc: proc, Kind: KindWrite, Token: token, OK: ok, Key: key})
	f.mu.Unlock()
	if !ok {
		http.Error(w, "stale token", http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
