//go:build unix

package main

import (
	"regexp"
	"strings"
)

// userNames maps the Go names that the library's errors use for a setting
// ("elector: Options.TTL is 50ms") to what the user of elect sets: a flag,
// or a query parameter of the backend URL. The key is the package prefix
// of the message and the field.
var userNames = map[string]string{
	"elector.TTL":           "--ttl",
	"elector.SafetyMargin":  "--safety-margin",
	"elector.RenewInterval": "--renew-interval",

	"compare.TTL":              "--ttl",
	"compare.Duration":         "--duration",
	"compare.Trials":           "--trials",
	"compare.FailoverTrials":   "--failover-trials",
	"compare.ThroughputTrials": "--throughput-trials",
	"compare.Concurrency":      "--concurrency",
	"compare.Held":             "--held",
	"compare.RenewRounds":      "--renew-rounds",
	"compare.Partitions":       "--partitions",
	"compare.Members":          "--members",
	"compare.RebalanceTrials":  "--rebalance-trials",

	"redlock.Prefix":            "query parameter prefix",
	"redlock.NoPrefix":          "query parameter no_prefix",
	"redlock.RequestTimeout":    "query parameter request_timeout",
	"redlock.DriftFactor":       "query parameter drift_factor",
	"etcd.DriftFactor":          "query parameter drift_factor",
	"etcd.Prefix":               "query parameter prefix",
	"etcd.CleanupTimeout":       "query parameter cleanup_timeout",
	"etcd.RequestTimeout":       "query parameter request_timeout",
	"zookeeper.DriftFactor":     "query parameter drift_factor",
	"zookeeper.DisconnectGrace": "query parameter disconnect_grace",
	"zookeeper.Prefix":          "query parameter prefix",
	"zookeeper.TickTime":        "query parameter tick_time",
	"zookeeper.SyncLimit":       "query parameter sync_limit",
	"kube.DriftFactor":          "query parameter drift_factor",
	"kube.CleanupTimeout":       "query parameter cleanup_timeout",
	"kube.RequestTimeout":       "query parameter request_timeout",
	"migrate.Epoch":             "query parameter epoch",
	"migrate.RenewInterval":     "query parameter renew_interval",
	"migrate.NewName":           "query parameter new_name",
}

var (
	// optionField matches "pkg: Options.Field is " and "pkg: invalid
	// request: Options.Field is ".
	optionField = regexp.MustCompile(`\b(elector|compare|redlock|etcd|zookeeper|kube|migrate): ((?:invalid request: )?)Options\.(\w+)( is)?`)
	// candidateTTL matches a driver's word for the TTL elect asked for.
	candidateTTL = regexp.MustCompile(`Candidate\.TTL( is)?`)
	// dialTimeout matches a driver's "within 372ms (dial_timeout)", a
	// number the user may never have set.
	dialTimeout = regexp.MustCompile(`within \S+ \(dial_timeout\)`)
	// refusedTTL matches a driver's refusal of the TTL elect asked for
	// ("invalid request: TTL 1s is below 1.75s").
	refusedTTL = regexp.MustCompile(`\bTTL (\S+) is (below|above)`)
	// singleDash matches the flag package's "-name" in its errors.
	singleDash = regexp.MustCompile(`(flag provided but not defined: |for flag |for |flag needs an argument: )-(\w)`)
)

// fieldNames rewrites the Go names that the drivers' messages mention
// beside others (not as "pkg: Options.Field is") to what the user of elect
// sets. Longer names come first: a Replacer tries its pairs in order.
var fieldNames = strings.NewReplacer(
	"Options.TickTime and Options.SyncLimit", "query parameters tick_time and sync_limit",
	"Options.TickTime", "query parameter tick_time",
	"Options.SyncLimit", "query parameter sync_limit",
	"set Options.ElectorOnly", "set query parameter elector_only=true",
	"Options.ElectorOnly", "query parameter elector_only=true",
	"(Options.RequestTimeout)", "(query parameter request_timeout)",
	"within RequestTimeout", "within request_timeout",
	"(raise RequestTimeout, request_timeout in a URL,", "(raise the URL's request_timeout",
)

// forUser rewrites an error message of elect so that it names what the
// user sets instead of the library's Go names: "--ttl 50ms" for
// "Options.TTL is 50ms", "query parameter request_timeout is 20s" for
// "Options.RequestTimeout is 20s", "--bogus" for the flag package's "-bogus".
func forUser(msg string) string {
	msg = optionField.ReplaceAllStringFunc(msg, func(m string) string {
		s := optionField.FindStringSubmatch(m)
		name, ok := userNames[s[1]+"."+s[3]]
		if !ok {
			return m
		}
		if s[4] != "" && strings.HasPrefix(name, "--") {
			return s[1] + ": " + s[2] + name // "--ttl 50ms"
		}
		return s[1] + ": " + s[2] + name + s[4]
	})
	msg = candidateTTL.ReplaceAllStringFunc(msg, func(m string) string { return "--ttl" })
	msg = refusedTTL.ReplaceAllString(msg, "--ttl $1 is $2")
	msg = fieldNames.Replace(msg)
	msg = dialTimeout.ReplaceAllString(msg, "before the connection was made (bounded by query parameter dial_timeout, or by what was left of elect's own time limit)")
	return singleDash.ReplaceAllString(msg, "$1--$2")
}
