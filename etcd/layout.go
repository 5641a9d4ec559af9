package etcd

import (
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Key layout: the candidates of an election are the keys <dir><lease ID in
// lowercase hex>, where dir is Prefix + election + "/", exactly as
// concurrency.Election writes them (Campaign in
// https://github.com/etcd-io/etcd/blob/main/client/v3/concurrency/election.go).
//
// Upstream ranges over the whole prefix dir, so the keys of election
// "jobs/eu" (dir "jobs/eu/") count as candidates of "jobs". This driver
// reads only the keys directly under dir whose last segment is a lease ID:
// it ranges over [dir+"0", dir+"g") — every lowercase hex digit sorts in
// between — and drops keys with anything but hex digits after dir.

// electionDir returns the key directory of election.
func (b *Backend) electionDir(election string) string { return b.cfg.prefix + election + "/" }

// candidateKey returns the key a candidate on lease id writes under dir.
func candidateKey(dir string, id clientv3.LeaseID) string {
	return dir + strconv.FormatInt(int64(id), 16)
}

// candidateRange returns the options that, with key dir+"0", range over the
// keys that can be candidates of the election at dir.
func candidateRange(dir string, opts ...clientv3.OpOption) (string, []clientv3.OpOption) {
	return dir + "0", append([]clientv3.OpOption{clientv3.WithRange(dir + "g")}, opts...)
}

// isCandidate reports whether key is a candidate directly under dir.
func isCandidate(dir string, key []byte) bool {
	if len(key) <= len(dir) || string(key[:len(dir)]) != dir {
		return false
	}
	for _, c := range key[len(dir):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// queue is the candidates of one election as read at one revision.
type queue struct {
	first *mvccpb.KeyValue // the leader: lowest create revision
	own   *mvccpb.KeyValue // the key asked about, if present
	pred  *mvccpb.KeyValue // own's immediate predecessor, if any
}

// readQueue sorts kvs (a candidateRange read) into a queue, relative to
// the key own (which may be "").
func readQueue(dir string, kvs []*mvccpb.KeyValue, own string) queue {
	var q queue
	for _, kv := range kvs {
		if !isCandidate(dir, kv.Key) {
			continue
		}
		if q.first == nil || kv.CreateRevision < q.first.CreateRevision {
			q.first = kv
		}
		if own != "" && string(kv.Key) == own {
			q.own = kv
		}
	}
	if q.own == nil {
		return q
	}
	for _, kv := range kvs {
		if !isCandidate(dir, kv.Key) || kv.CreateRevision >= q.own.CreateRevision {
			continue
		}
		if q.pred == nil || kv.CreateRevision > q.pred.CreateRevision {
			q.pred = kv
		}
	}
	return q
}
