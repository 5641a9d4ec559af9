package kube

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leaderkit/elector/backend"
)

// HolderAnnotation is the annotation a Lease held by an elector candidate
// carries: a random value unique to that lease, with which the driver tells
// its own lease from another candidate's of the same identity. Other
// writers leave it alone; it counts only together with the holderIdentity
// and leaseTransitions the candidate wrote (see the package documentation,
// # Lease record).
const HolderAnnotation = "elector.leaderkit.dev/holder"

// newNonce returns a random value for [HolderAnnotation].
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// holderOf returns the identity the Lease names as its holder, "" when it
// names none (never written, or released).
func holderOf(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// durationOf returns the holder's leaseDurationSeconds as a duration, 0 when
// unset (client-go then counts the Lease expired at once, and so does the
// driver).
func durationOf(l *coordinationv1.Lease) time.Duration {
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds < 0 {
		return 0
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}

// transitionsOf returns the Lease's leaseTransitions, 0 when unset.
func transitionsOf(l *coordinationv1.Lease) int32 {
	if l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions < 0 {
		return 0
	}
	return *l.Spec.LeaseTransitions
}

// specKey is what a waiting candidate compares to decide whether a Lease
// changed: the fields of client-go's LeaderElectionRecord (holder, duration,
// acquire and renew times, transitions, preferred holder, strategy). A new
// value restarts the holder's expiry, as a new record does in client-go.
type specKey struct {
	holder, preferred, strategy string
	duration, transitions       int64
	acquire, renew              time.Time
	hasDuration, hasTransitions bool
}

func keyOf(l *coordinationv1.Lease) specKey {
	s := l.Spec
	k := specKey{holder: holderOf(l)}
	if s.PreferredHolder != nil {
		k.preferred = *s.PreferredHolder
	}
	if s.Strategy != nil {
		k.strategy = string(*s.Strategy)
	}
	if s.LeaseDurationSeconds != nil {
		k.duration, k.hasDuration = int64(*s.LeaseDurationSeconds), true
	}
	if s.LeaseTransitions != nil {
		k.transitions, k.hasTransitions = int64(*s.LeaseTransitions), true
	}
	if s.AcquireTime != nil {
		k.acquire = s.AcquireTime.UTC()
	}
	if s.RenewTime != nil {
		k.renew = s.RenewTime.UTC()
	}
	return k
}

// secondsKeyOf is keyOf with the times in whole seconds: the record as
// client-go compares it. client-go's LeaderElector keeps the record it read
// last as JSON, where times are whole seconds (metav1.Time), and restarts
// the holder's expiry only when that JSON changes; so a renewal within the
// same second as the one before it is invisible to it.
func secondsKeyOf(l *coordinationv1.Lease) specKey {
	k := keyOf(l)
	k.acquire, k.renew = k.acquire.Truncate(time.Second), k.renew.Truncate(time.Second)
	return k
}

// owner identifies one elector lease on a Lease object.
type owner struct {
	identity string
	nonce    string
	token    int32 // leaseTransitions it wrote
}

// owns reports whether the Lease is held by o: o's identity, o's
// annotation and o's transitions count. A client-go candidate that takes
// the Lease over writes its own identity and increments the count, so a
// stale annotation it leaves behind never matches.
func (o owner) owns(l *coordinationv1.Lease) bool {
	return l != nil && holderOf(l) == o.identity && l.Annotations[HolderAnnotation] == o.nonce &&
		transitionsOf(l) == o.token
}

// microNow returns the current time as a MicroTime, after prev: each record
// the driver writes differs from the one before it, so that every renewal
// restarts the expiry that waiting candidates count.
func microNow(prev *metav1.MicroTime) metav1.MicroTime {
	now := time.Now().Truncate(time.Microsecond)
	if prev != nil && !now.After(prev.Time) {
		now = prev.Add(time.Microsecond)
	}
	return metav1.NewMicroTime(now)
}

// record is a holder record the driver writes onto a Lease, in client-go's
// format: a candidate's (holderRecord), a release's (releasedRecord) or a
// "migrated" marker's (markerRecord).
type record struct {
	identity string // holderIdentity; "" names no holder
	seconds  int32  // leaseDurationSeconds
	// renewal keeps the Lease's acquireTime (a holder renewing its own
	// record); otherwise acquireTime is the record's renewTime.
	renewal bool
	nonce   string // HolderAnnotation; "" removes the annotation
	token   *int32 // leaseTransitions; nil keeps the Lease's count
}

// holderRecord is o's record for a lease of secs seconds: acquireTime when
// taken (acquire), kept by renewals; leaseTransitions o's token.
func holderRecord(o owner, secs int32, acquire bool) record {
	token := o.token
	return record{identity: o.identity, seconds: secs, renewal: !acquire, nonce: o.nonce, token: &token}
}

// releasedRecord is the record of a released Lease, as client-go's
// ReleaseOnCancel writes it: no holder, a duration of one second, the
// transitions count kept.
func releasedRecord() record { return record{seconds: 1} }

// markerRecord is the "migrated" marker naming identity for markerSeconds,
// the transitions count kept, without the elector annotation.
func markerRecord(identity string) record { return record{identity: identity, seconds: markerSeconds} }

// writeTo writes r onto l. renewTime is now, after l's previous one: each
// record the driver writes differs from the one before it, so that every
// write restarts the expiry that waiting candidates count.
func (r record) writeTo(l *coordinationv1.Lease) {
	renew := microNow(l.Spec.RenewTime)
	identity, secs := r.identity, r.seconds
	l.Spec.HolderIdentity = &identity
	l.Spec.LeaseDurationSeconds = &secs
	l.Spec.RenewTime = &renew
	if !r.renewal || l.Spec.AcquireTime == nil {
		at := renew
		l.Spec.AcquireTime = &at
	}
	if r.token != nil {
		token := *r.token
		l.Spec.LeaseTransitions = &token
	}
	if r.nonce == "" {
		delete(l.Annotations, HolderAnnotation)
		return
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[HolderAnnotation] = r.nonce
}

// holder reports the Lease as a [backend.Holder] of election: the zero
// Holder when it names no holder. TTL is the time left until renewTime +
// leaseDurationSeconds by this process's wall clock, at most the duration;
// it is a report that assumes the clocks agree, never used for exclusion.
func holder(election string, l *coordinationv1.Lease) backend.Holder {
	id := holderOf(l)
	if id == "" {
		return backend.Holder{}
	}
	h := backend.Holder{Election: election, Identity: id, Token: uint64(transitionsOf(l))}
	if d := durationOf(l); d > 0 && l.Spec.RenewTime != nil {
		h.TTL = min(max(time.Until(l.Spec.RenewTime.Add(d)), 0), d)
	}
	return h
}
