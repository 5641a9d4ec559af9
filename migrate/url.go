package migrate

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
)

// SchemePrefix starts the URL scheme of a migrating backend: importing this
// package registers the schemes SchemePrefix+phase ("migrate+old",
// "migrate+both", "migrate+new", "migrate+done") with
// backendurl.DefaultMux. Such a URL names the two backends by their own
// URLs, each percent-encoded as a query value:
//
//	migrate+<phase>://?old=<old URL>&new=<new URL>[&epoch=N][&new_name=NAME][&renew_interval=D]
//
// for example
//
//	migrate+both://?old=redis%3A%2F%2F127.0.0.1%3A6379&new=etcd%3A%2F%2F127.0.0.1%3A2379
//
// old and new are opened with backendurl.DefaultMux (so their schemes'
// packages must be imported too); old may be left out in phase done only.
// epoch, new_name and renew_interval set [Options.Epoch],
// [Options.NewName] (default: the new URL's scheme, "redis", "etcd" or "zk",
// TLS or not) and [Options.RenewInterval]. The marker is written
// by the old backend itself (every driver of this module implements
// [Marker]). Errors never show either URL's credentials.
const SchemePrefix = "migrate+"

func init() {
	for p := PhaseOld; p <= PhaseDone; p++ {
		backendurl.Register(SchemePrefix+p.String(), backendurl.OpenerFunc(openURL))
	}
}

// openURL opens a migrate+<phase>:// URL; see [SchemePrefix].
func openURL(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	phase, err := ParsePhase(strings.TrimPrefix(strings.ToLower(u.Scheme), SchemePrefix))
	if err != nil {
		return nil, nil, err
	}
	if u.Host != "" || u.User != nil {
		return nil, nil, fmt.Errorf("%w: a migrate URL has no host or user; want %s%v://?old=<URL>&new=<URL>, each inner URL percent-encoded", backend.ErrInvalid, SchemePrefix, phase)
	}
	if err := backendurl.NoPath(u, "want "+SchemePrefix+phase.String()+"://?old=<URL>&new=<URL>"); err != nil {
		return nil, nil, err
	}
	p, err := backendurl.NewParams(u)
	if err != nil {
		return nil, nil, err
	}
	oldURL, newURL := p.String("old"), p.String("new")
	opts := &Options{NewName: p.String("new_name"), RenewInterval: p.Duration("renew_interval")}
	if e := p.String("epoch"); e != "" {
		n, err := strconv.ParseUint(e, 10, 16)
		if err != nil || n >= MaxEpoch {
			return nil, nil, fmt.Errorf("%w: query parameter epoch=%q; want an integer from 0 to %d", backend.ErrInvalid, e, MaxEpoch-1)
		}
		opts.Epoch = uint16(n)
	}
	if err := p.Finish(); err != nil {
		return nil, nil, err
	}
	switch {
	case newURL == "":
		return nil, nil, fmt.Errorf("%w: query parameter new is missing; want the new backend's URL, percent-encoded", backend.ErrInvalid)
	case oldURL == "" && phase != PhaseDone:
		return nil, nil, fmt.Errorf("%w: query parameter old is missing in phase %v; want the old backend's URL, percent-encoded (only phase done may leave it out)", backend.ErrInvalid, phase)
	}
	if opts.NewName == "" {
		scheme, _, _ := strings.Cut(newURL, "://")
		opts.NewName = strings.ToLower(scheme)
		switch opts.NewName {
		case "rediss", "etcds", "zks": // the TLS form names the same store
			opts.NewName = strings.TrimSuffix(opts.NewName, "s")
		}
	}
	return openSides(ctx, phase, oldURL, newURL, opts)
}

// openSides opens the inner URLs and the migrate Backend over them.
func openSides(ctx context.Context, phase Phase, oldURL, newURL string, opts *Options) (backend.Backend, io.Closer, error) {
	var closers backendurl.Closers
	var old backend.Backend
	if oldURL != "" {
		ob, oc, err := backendurl.Open(ctx, oldURL)
		if err != nil {
			return nil, nil, fmt.Errorf("old: %w", err)
		}
		old, closers = ob, append(closers, oc)
	}
	nb, nc, err := backendurl.Open(ctx, newURL)
	if err != nil {
		_ = closers.Close()
		return nil, nil, fmt.Errorf("new: %w", err)
	}
	closers = append(closers, nc)
	b, err := New(old, nb, phase, opts)
	if err != nil {
		_ = closers.Close()
		return nil, nil, err
	}
	return b, append(backendurl.Closers{b}, closers...), nil
}
