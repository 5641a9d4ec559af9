package migrate

import (
	"fmt"

	"github.com/leaderkit/elector/backend"
)

// Token layout: the high 16 bits of a token are the epoch, the low 48 bits
// the token the backend issued (its native token: a Redlock counter value,
// an etcd create revision, a ZooKeeper czxid).
const (
	// EpochShift is the bit position of the epoch in a token.
	EpochShift = 48
	// MaxNative is the largest native token a term can carry: 2^48 − 1.
	MaxNative = 1<<EpochShift - 1
	// MaxEpoch is the largest epoch: 2^16 − 1.
	MaxEpoch = 1<<(64-EpochShift) - 1
)

// Token returns epoch<<48 | native, the token a fence compares. It returns
// an error wrapping [backend.ErrInvalid] when native is above [MaxNative]:
// such a token would overflow into the epoch and could compare below an
// older one.
func Token(epoch uint16, native uint64) (uint64, error) {
	if native > MaxNative {
		return 0, fmt.Errorf("migrate: %w: native token %d is above 2^48-1; the epoch encoding cannot carry it", backend.ErrInvalid, native)
	}
	return uint64(epoch)<<EpochShift | native, nil
}

// SplitToken returns the epoch and the native token of a token made by
// [Token].
func SplitToken(token uint64) (epoch uint16, native uint64) {
	return uint16(token >> EpochShift), token & MaxNative
}
