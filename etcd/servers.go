package etcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// statusTimeout bounds each member's Status request in serversRevokeEarly.
const statusTimeout = 2 * time.Second

// revokesEarly reports whether an etcd server of the given version lets a
// raft leader that was stalled or paused, and still believes it leads,
// revoke leases by its own stale clock once it runs again
// (https://github.com/etcd-io/etcd/issues/15247). The fix,
// https://github.com/etcd-io/etcd/pull/16822, checks leadership before
// revoking and before renewing; it is in 3.6.0 and was backported to 3.5.13
// and 3.4.31. An unparsable version counts as affected.
func revokesEarly(version string) bool {
	var major, minor, patch int
	if _, err := fmt.Sscanf(version, "%d.%d.%d", &major, &minor, &patch); err != nil {
		return true
	}
	switch {
	case major != 3:
		return major < 3
	case minor >= 6:
		return false
	case minor == 5:
		return patch < 13
	case minor == 4:
		return patch < 31
	}
	return true
}

// serverCheck remembers whether the cluster's members can revoke leases
// early, once every member has answered.
type serverCheck struct {
	mu    sync.Mutex
	done  bool
	early bool
}

// serversRevokeEarly reports whether any member of the cluster runs an etcd
// release that can revoke leases early ([revokesEarly]). It asks the
// members the client's endpoints reach for their version (Maintenance
// Status); a member that does not answer counts as affected, and the
// answer is remembered once every member has answered, so the check runs
// once per Backend on a healthy cluster.
func (b *Backend) serversRevokeEarly(ctx context.Context) (bool, error) {
	c := &b.servers
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return c.early, nil
	}
	members, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.MemberListResponse, error) {
		return b.cli.MemberList(ctx)
	})
	if err != nil {
		return false, err
	}
	endpoints := b.cli.Endpoints()
	versions := make([]string, len(endpoints))
	ids := make([]uint64, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			if st, err := b.cli.Status(sctx, ep); err == nil {
				versions[i], ids[i] = st.Version, st.Header.MemberId
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	known := make(map[uint64]string)
	for i, v := range versions {
		if v != "" {
			known[ids[i]] = v
		}
	}
	early, complete := false, true
	for _, m := range members.Members {
		v, ok := known[m.ID]
		if !ok {
			complete = false
			early = true
			continue
		}
		early = early || revokesEarly(v)
	}
	c.done, c.early = complete, early
	return early, nil
}
