package zookeeper

import (
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
)

// Guard returns a check operation for zk.Conn.Multi that lets the other
// operations of the multi commit only while the term identified by election
// and token (a lease of b, as reported in elector.Term) is current: it checks
// that the term's candidate znode still exists. The znode is ephemeral and
// named by a uuid, so it exists exactly as long as the term at the store:
// after a release, a session expiry or a deletion, the multi fails with
// zk.ErrNoNode and writes nothing. The multi may run on any session.
//
//	check, err := b.Guard(term.Election, term.Token)
//	if err != nil { return err } // not (or no longer) leading
//	_, err = conn.Multi(check, &zk.SetDataRequest{Path: "/app/config", Data: v, Version: -1})
//
// Guard returns an error wrapping [backend.ErrLost] when b holds no such
// lease.
func (b *Backend) Guard(election string, token uint64) (*zk.CheckVersionRequest, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for l := range b.leases {
		if l.election == election && l.token == token {
			return &zk.CheckVersionRequest{Path: l.path, Version: -1}, nil
		}
	}
	return nil, fmt.Errorf("zookeeper: guard %q token %d: %w", election, token, backend.ErrLost)
}
