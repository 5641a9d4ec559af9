package compare

import (
	"encoding/json"
	"slices"
	"time"
)

// Workload names, in the order [Run] measures them and reports show them.
const (
	// Acquire is one uncontended Campaign followed by its Release, on an
	// election nobody else wants: the cost of a term that hands over to no one.
	Acquire = "acquire+release"
	// Throughput is [Options.Concurrency] goroutines, each campaigning for
	// and releasing its own election in a loop; a sample is one
	// Campaign+Release, and [Result.PerSecond] counts them per second.
	Throughput = "throughput"
	// Handover is a graceful hand-over: the time from the holder's Release
	// to the election of a candidate that was waiting, on another client.
	Handover = "handover"
	// Renew is the latency of one Renew while [Options.Held] elections
	// ([Result.Held] on a rate-limited client) are held on one client and
	// all of them are renewed every TTL/3.
	Renew = "renew"
	// Failover is a crash: the time from the holder's last renewal to the
	// election of a waiting candidate, after the holder's client is cut off
	// from the store without a release. It cannot be shorter than the TTL.
	Failover = "failover"
	// Join is a rebalance: [Options.Members] members of a
	// [partition.Assigner] group own [Options.Partitions] partitions, each
	// member on a client of its own; one more member starts, and the sample
	// is the time from its start until every partition is owned by the
	// member [partition.Place] puts it on.
	Join = "rebalance-join"
	// Leave is the rebalance after that member leaves gracefully: the time
	// from the cancellation of its Run until every partition is owned as
	// placed without it.
	Leave = "rebalance-leave"
)

// Workloads lists the workload names in report order.
var Workloads = []string{Acquire, Throughput, Handover, Renew, Failover, Join, Leave}

// Result is what one workload measured on one backend.
type Result struct {
	// Workload is one of the names in [Workloads].
	Workload string
	// Samples are the measured latencies, sorted.
	Samples []time.Duration
	// Errors counts the trials or operations that failed; FirstError is the
	// first failure's message.
	Errors     int
	FirstError string
	// P50, P95, P99 and Max summarise Samples (nearest rank); all zero
	// when there are none.
	P50, P95, P99, Max time.Duration
	// PerSecond is, for [Throughput], Campaign+Release pairs completed per
	// second by all goroutines together, and for [Renew], renewals per
	// second one client sustained; 0 for the other workloads.
	PerSecond float64
	// Held is, for [Renew], the number of elections held and renewed:
	// [Options.Held], or fewer on a backend whose client limits its request
	// rate ([BackendReport.RequestRate]): as many as
	// half that rate renews every TTL/3, one request each, leaving the
	// other half to the client's other requests, so that the workload
	// measures the store and not the client's limiter. 0 for the other
	// workloads.
	Held int
	// Requests is, for [Renew], what renewing the held elections cost in
	// requests to the store; nil for the other workloads and when the
	// target cannot count requests (no [Target.OpenCounted]).
	Requests *RequestCount
	// Skipped says why the workload was not measured ("" when it was).
	Skipped string
}

// RequestCount is the number of requests a client sent to the store while
// it held [Options.Held] elections and renewed them all every TTL/3, for
// [Options.RenewRounds] rounds: the renewals and whatever else the client
// sent meanwhile (etcd lease keep-alives, ZooKeeper pings).
type RequestCount struct {
	// Total is the number of requests sent during Window, which spans the
	// rounds: from the start of the first to one renewal interval after the
	// start of the last.
	Total  int64
	Window time.Duration
	// PerHeld is Total per held election per round: the requests one held
	// election costs per renewal interval (TTL/3).
	PerHeld float64
	// PerSecond is Total per second of Window.
	PerSecond float64
}

// add records a sample.
func (r *Result) add(d time.Duration) { r.Samples = append(r.Samples, d) }

// fail records a failure.
func (r *Result) fail(err error) {
	if r.Errors == 0 {
		r.FirstError = err.Error()
	}
	r.Errors++
}

// finish sorts the samples and computes the percentiles.
func (r *Result) finish() {
	slices.Sort(r.Samples)
	r.P50, r.P95, r.P99 = Percentile(r.Samples, 50), Percentile(r.Samples, 95), Percentile(r.Samples, 99)
	if n := len(r.Samples); n > 0 {
		r.Max = r.Samples[n-1]
	}
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method: the smallest sample with at least p% of the samples
// at or below it. It returns 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(float64(n)*p/100 + 0.999999999)
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// ms converts a duration to float milliseconds, for JSON.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// resultJSON is the JSON form of a Result: durations in milliseconds.
type resultJSON struct {
	Workload   string    `json:"workload"`
	Samples    int       `json:"samples"`
	Errors     int       `json:"errors"`
	FirstError string    `json:"first_error,omitempty"`
	P50        float64   `json:"p50_ms"`
	P95        float64   `json:"p95_ms"`
	P99        float64   `json:"p99_ms"`
	Max        float64   `json:"max_ms"`
	PerSecond  float64   `json:"per_second,omitempty"`
	Held       int       `json:"held,omitempty"`
	Requests   *reqJSON  `json:"requests,omitempty"`
	Skipped    string    `json:"skipped,omitempty"`
	SamplesMS  []float64 `json:"samples_ms"`
}

// reqJSON is the JSON form of a RequestCount.
type reqJSON struct {
	Total     int64   `json:"total"`
	WindowMS  float64 `json:"window_ms"`
	PerHeld   float64 `json:"per_held_per_round"`
	PerSecond float64 `json:"per_second"`
}

// MarshalJSON writes r with durations in milliseconds (fields p50_ms …
// max_ms and samples_ms).
func (r Result) MarshalJSON() ([]byte, error) {
	j := resultJSON{Workload: r.Workload, Samples: len(r.Samples), Errors: r.Errors, FirstError: r.FirstError,
		P50: ms(r.P50), P95: ms(r.P95), P99: ms(r.P99), Max: ms(r.Max), PerSecond: r.PerSecond, Held: r.Held, Skipped: r.Skipped,
		SamplesMS: make([]float64, len(r.Samples))}
	for i, s := range r.Samples {
		j.SamplesMS[i] = ms(s)
	}
	if c := r.Requests; c != nil {
		j.Requests = &reqJSON{Total: c.Total, WindowMS: ms(c.Window), PerHeld: c.PerHeld, PerSecond: c.PerSecond}
	}
	return json.Marshal(j)
}
