package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
)

// errClosed is returned by calls on a closed Backend.
var errClosed = fmt.Errorf("zookeeper: %w", backend.ErrClosed)

// errVanished reports that a waiting candidate's znode disappeared (deleted
// by someone else, or its session ended); campaigning again creates a new one.
var errVanished = fmt.Errorf("candidate znode vanished: %w", backend.ErrLost)

// errSessionEnded reports that the session expired while a candidate waited.
var errSessionEnded = fmt.Errorf("session ended while campaigning: %w", backend.ErrLost)

// wrap adds context to err, leaving context errors and ErrClosed as they are.
func wrap(op, election string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || err == errClosed {
		return err
	}
	return fmt.Errorf("zookeeper: %s %q: %w", op, election, err)
}

// mapErr turns go-zookeeper's shutdown errors into [backend.ErrClosed] once
// the Backend is closed (done is closed).
func mapErr(done <-chan struct{}, err error) error {
	if err == nil {
		return nil
	}
	select {
	case <-done:
		if errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrClosing) {
			return errClosed
		}
	default:
	}
	return err
}

// errGranted reports that the ensemble granted a session timeout other than
// the TTL asked, and the range of session timeouts that implies: servers
// clamp a request to [minSessionTimeout, maxSessionTimeout].
func errGranted(asked, granted time.Duration) error {
	bound := "from"
	if granted < asked {
		bound = "up to"
	}
	return fmt.Errorf("%w: TTL %v: the ensemble granted a %v session; it accepts session timeouts %s %v",
		backend.ErrInvalid, asked, granted, bound, granted)
}
