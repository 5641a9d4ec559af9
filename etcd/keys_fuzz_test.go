package etcd

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
)

// FuzzCandidateKeys: for any two valid election names, a candidate key of
// one lies in its own candidate range and counts as its candidate, and never
// counts as a candidate of the other (not even of a parent election such as
// "jobs" for "jobs/eu", which upstream concurrency.Election confuses).
func FuzzCandidateKeys(f *testing.F) {
	f.Add("elector/", "jobs", "jobs/eu", int64(0x694d7a1c2b3e4f50))
	f.Add("", "a", "a/0", int64(1))
	f.Add("p", "x/f", "x", int64(1)<<62)
	f.Fuzz(func(t *testing.T, prefix, a, b string, id int64) {
		// etcd grants positive lease IDs only.
		if id <= 0 || a == b || backend.ValidateElection(a) != nil || backend.ValidateElection(b) != nil {
			return
		}
		be := &Backend{cfg: config{prefix: prefix}}
		dirA, dirB := be.electionDir(a), be.electionDir(b)
		key := candidateKey(dirA, clientv3.LeaseID(id))
		from, opts := candidateRange(dirA)
		op := clientv3.OpGet(from, opts...)
		if !isCandidate(dirA, []byte(key)) || key < from || key >= string(op.RangeBytes()) {
			t.Fatalf("candidateKey(%q, %x) = %q: want a candidate of %q in [%q, %q)", dirA, id, key, a, from, op.RangeBytes())
		}
		if isCandidate(dirB, []byte(key)) {
			t.Fatalf("candidate key %q of election %q counts as a candidate of %q", key, a, b)
		}
	})
}
