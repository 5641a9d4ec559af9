package migrate

import (
	"context"
	"errors"
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
//
// An inner URL may not be a migrate URL itself, and old and new may not
// name the same store: the same kind of server, a server in common (as
// host:port, compared as written) and the same key space (redis: the
// database and key prefix; etcd: the key prefix; zk: the prefix znode, each
// with the driver's default when the URL sets none). A candidate on such
// a pair would hold the old lease and then wait for ever behind it on the
// new side. [CheckURL] makes these checks and the rest of the form's
// without opening anything.
const SchemePrefix = "migrate+"

func init() {
	for p := PhaseOld; p <= PhaseDone; p++ {
		backendurl.Register(SchemePrefix+p.String(), backendurl.OpenerFunc(openURL))
	}
}

// openURL opens a migrate+<phase>:// URL; see [SchemePrefix].
func openURL(ctx context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	m, err := parseURL(u, false)
	if err != nil {
		return nil, nil, err
	}
	return openSides(ctx, m.phase, m.oldURL, m.newURL, m.opts)
}

// CheckURL reports whether raw is a migrate+<phase>:// URL that the
// opener registered by this package would accept, without opening
// anything: the form of [SchemePrefix], a phase in any case, its query
// parameters, and inner URLs that have a registered scheme other than a
// migrate one, a well-formed host list, and name two different stores.
// What only the driver's opener checks (its own query parameters) is left
// to opening. Errors wrap [backend.ErrInvalid] and never show either URL's
// credentials.
func CheckURL(raw string) error {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok || !strings.HasPrefix(strings.ToLower(scheme), SchemePrefix) {
		return fmt.Errorf("migrate: %w: want a %s<phase>://?old=<URL>&new=<URL> URL", backend.ErrInvalid, SchemePrefix)
	}
	u, err := backendurl.Parse(raw) // as Open reads it
	if err != nil {
		return fmt.Errorf("migrate: %w: %w", backend.ErrInvalid, err)
	}
	if _, err := parseURL(u, true); err != nil {
		if !errors.Is(err, backend.ErrInvalid) {
			return fmt.Errorf("migrate: %w: %w", backend.ErrInvalid, err)
		}
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// migrateURL is what a migrate+<phase>:// URL says.
type migrateURL struct {
	phase          Phase
	oldURL, newURL string
	opts           *Options
}

// parseURL reads u; strict is as for checkSides.
func parseURL(u *url.URL, strict bool) (migrateURL, error) {
	phase, err := ParsePhase(strings.TrimPrefix(strings.ToLower(u.Scheme), SchemePrefix))
	if err != nil {
		return migrateURL{}, err
	}
	if u.Host != "" || u.User != nil {
		return migrateURL{}, fmt.Errorf("%w: a migrate URL has no host or user; want %s%v://?old=<URL>&new=<URL>, each inner URL percent-encoded", backend.ErrInvalid, SchemePrefix, phase)
	}
	if err := backendurl.NoPath(u, "want "+SchemePrefix+phase.String()+"://?old=<URL>&new=<URL>"); err != nil {
		return migrateURL{}, fmt.Errorf("%w: %w", backend.ErrInvalid, err)
	}
	p, err := backendurl.NewParams(u)
	if err != nil {
		return migrateURL{}, err
	}
	m := migrateURL{phase: phase, oldURL: p.String("old"), newURL: p.String("new")}
	m.opts = &Options{NewName: p.String("new_name"), RenewInterval: p.Duration("renew_interval")}
	if e := p.String("epoch"); e != "" {
		n, err := strconv.ParseUint(e, 10, 16)
		if err != nil || n >= MaxEpoch {
			return migrateURL{}, fmt.Errorf("%w: query parameter epoch=%q; want an integer from 0 to %d", backend.ErrInvalid, backendurl.Redact(e), MaxEpoch-1)
		}
		m.opts.Epoch = uint16(n)
	}
	if err := p.Finish(); err != nil {
		return migrateURL{}, err
	}
	switch {
	case m.newURL == "":
		return migrateURL{}, fmt.Errorf("%w: query parameter new is missing; want the new backend's URL, percent-encoded", backend.ErrInvalid)
	case m.oldURL == "" && phase != PhaseDone:
		return migrateURL{}, fmt.Errorf("%w: query parameter old is missing in phase %v; want the old backend's URL, percent-encoded (only phase done may leave it out)", backend.ErrInvalid, phase)
	}
	if err := checkSides(m.oldURL, m.newURL, strict); err != nil {
		return migrateURL{}, err
	}
	if m.opts.NewName == "" {
		scheme, _, _ := strings.Cut(m.newURL, "://")
		m.opts.NewName = strings.ToLower(scheme)
		switch m.opts.NewName {
		case "rediss", "etcds", "zks": // the TLS form names the same store
			m.opts.NewName = strings.TrimSuffix(m.opts.NewName, "s")
		}
	}
	if strict {
		if err := backend.ValidateIdentity(MarkerPrefix + m.opts.NewName); err != nil {
			return migrateURL{}, fmt.Errorf("%w: new_name %q: %s", backend.ErrInvalid, backendurl.Redact(m.opts.NewName), backendurl.Redact(err.Error()))
		}
	}
	return m, nil
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
