package term

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"
)

// Limits are the bounds and default of a TTL, as the client's package
// documents them.
type Limits struct {
	MinTTL, MaxTTL, DefaultTTL time.Duration
}

// Resolve returns the timing of Options fields ttl, renew and margin with
// the defaults applied to zero values (DefaultTTL, RenewInterval TTL/3,
// SafetyMargin TTL/5), or an error naming the first invalid field, its
// value and the range allowed: a TTL within lim, a SafetyMargin below
// TTL/2, a RenewInterval below TTL - SafetyMargin. The error starts with
// "Options."; the client adds its package's prefix.
func Resolve(ttl, renew, margin time.Duration, lim Limits) (Timing, error) {
	switch {
	case ttl == 0:
		ttl = lim.DefaultTTL
	case ttl < lim.MinTTL || ttl > lim.MaxTTL:
		return Timing{}, fmt.Errorf("Options.TTL is %v; want between %v and %v (or 0 for the default %v)", ttl, lim.MinTTL, lim.MaxTTL, lim.DefaultTTL)
	}
	switch {
	case margin == 0:
		margin = ttl / 5
	case margin < 0:
		return Timing{}, fmt.Errorf("Options.SafetyMargin is %v; want a positive duration below TTL/2 = %v (or 0 for TTL/5)", margin, ttl/2)
	case margin >= ttl/2:
		return Timing{}, fmt.Errorf("Options.SafetyMargin %v is too large; want below TTL/2 = %v (or 0 for TTL/5)", margin, ttl/2)
	}
	switch {
	case renew == 0:
		renew = ttl / 3
	case renew < 0:
		return Timing{}, fmt.Errorf("Options.RenewInterval is %v; want a positive duration below TTL - SafetyMargin = %v (or 0 for TTL/3)", renew, ttl-margin)
	}
	if renew >= ttl-margin {
		return Timing{}, fmt.Errorf("Options.RenewInterval %v leaves no time to renew; want below TTL - SafetyMargin = %v - %v = %v",
			renew, ttl, margin, ttl-margin)
	}
	return Timing{TTL: ttl, RenewInterval: renew, SafetyMargin: margin}, nil
}

// DefaultIdentity returns the identity of a candidate that names none:
// "<hostname>-<pid>-<6 random hex digits>".
func DefaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
