package promelector

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
)

// Options configure [New]. A nil *Options means all defaults.
type Options struct {
	// Namespace prefixes every metric name. Default "elector".
	Namespace string
	// ConstLabels are added to every metric, for example the name of the
	// service. Default none.
	ConstLabels prometheus.Labels
	// Buckets are the buckets, in seconds, of the latency histograms
	// (campaign, renew, release). Default [DefaultBuckets], 1 ms to 60 s.
	// Term durations use [TermBuckets].
	Buckets []float64
}

// DefaultBuckets are the histogram buckets used when [Options.Buckets] is
// nil.
var DefaultBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// TermBuckets are the buckets of term_duration_seconds: 1 s to about 3
// days, each 4 times the last.
var TermBuckets = prometheus.ExponentialBuckets(1, 4, 10)

// Metrics collects the metrics of one or more Electors (told apart by the
// election label). Pass [Metrics.Observe] as [elector.Options.Observer] and
// register the Metrics with a prometheus.Registerer. It is safe for
// concurrent use.
type Metrics struct {
	isLeader    *prometheus.Desc
	terms       *prometheus.CounterVec
	revocations *prometheus.CounterVec
	campaign    *prometheus.HistogramVec
	renew       *prometheus.HistogramVec
	release     *prometheus.HistogramVec
	termLength  *prometheus.HistogramVec

	mu      sync.Mutex
	leading map[string]bool               // by election, from events
	inited  map[string]bool               // elections whose series exist
	tracked map[string][]*elector.Elector // by election, from Track
}

// New returns Metrics configured by opts.
func New(opts *Options) *Metrics {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Namespace == "" {
		o.Namespace = "elector"
	}
	if o.Buckets == nil {
		o.Buckets = DefaultBuckets
	}
	histWith := func(buckets []float64, name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: o.Namespace, Name: name, Help: help, ConstLabels: o.ConstLabels, Buckets: buckets,
		}, append([]string{"election"}, labels...))
	}
	hist := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return histWith(o.Buckets, name, help, labels...)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: o.Namespace, Name: name, Help: help, ConstLabels: o.ConstLabels,
		}, append([]string{"election"}, labels...))
	}
	return &Metrics{
		isLeader: prometheus.NewDesc(prometheus.BuildFQName(o.Namespace, "", "is_leader"),
			"1 while this process leads the election, else 0.", []string{"election"}, o.ConstLabels),
		terms:       counter("terms_total", "Terms this process started (elections won)."),
		revocations: counter("revocations_total", "Terms this process ended, by reason: resigned, preempted, lease_lost or stopped.", "reason"),
		campaign:    hist("campaign_duration_seconds", "Duration of one campaign attempt, including time queued behind a leader, by result: won or error.", "result"),
		renew:       hist("renew_duration_seconds", "Duration of one lease renewal, by result: ok, error or lost.", "result"),
		release:     hist("release_duration_seconds", "Duration of a lease release after a term, by result: ok or error.", "result"),
		termLength:  histWith(TermBuckets, "term_duration_seconds", "How long terms lasted, from election to revocation."),
		leading:     make(map[string]bool),
		inited:      make(map[string]bool),
		tracked:     make(map[string][]*elector.Elector),
	}
}

// Observe records ev. Use it as [elector.Options.Observer]. Kinds it does
// not know are ignored.
func (m *Metrics) Observe(ev elector.Event) {
	e := ev.Election
	switch ev.Kind {
	case elector.EventCampaign:
		m.init(e)
		result := "won"
		if ev.Err != nil {
			result = "error"
		}
		m.campaign.WithLabelValues(e, result).Observe(ev.Took.Seconds())
	case elector.EventElected:
		m.init(e)
		m.terms.WithLabelValues(e).Inc()
		m.setLeading(e, true)
	case elector.EventRenew:
		result := "ok"
		switch {
		case errors.Is(ev.Err, backend.ErrLost):
			result = "lost"
		case ev.Err != nil:
			result = "error"
		}
		m.renew.WithLabelValues(e, result).Observe(ev.Took.Seconds())
	case elector.EventRelease:
		result := "ok"
		if ev.Err != nil {
			result = "error"
		}
		m.release.WithLabelValues(e, result).Observe(ev.Took.Seconds())
	case elector.EventEnded:
		m.setLeading(e, false)
		m.revocations.WithLabelValues(e, Reason(ev.Err)).Inc()
		if !ev.Term.Start.IsZero() {
			m.termLength.WithLabelValues(e).Observe(time.Since(ev.Term.Start).Seconds())
		}
	}
}

// Reason names the reason a term ended, as the revocations_total metric's
// reason label: "resigned" for [elector.ErrResigned], "preempted" for
// [elector.ErrPreempted] (a yield to a candidate of a higher priority),
// "lease_lost" for [elector.ErrLeaseLost], and "stopped" for anything else
// (Run's ctx ended).
func Reason(err error) string {
	switch {
	case errors.Is(err, elector.ErrResigned):
		return "resigned"
	case errors.Is(err, elector.ErrPreempted):
		return "preempted"
	case errors.Is(err, elector.ErrLeaseLost):
		return "lease_lost"
	}
	return "stopped"
}

// init makes the election's is_leader and counter series exist from its
// first event, so that dashboards see zeros rather than gaps.
func (m *Metrics) init(election string) {
	m.mu.Lock()
	seen := m.inited[election]
	m.inited[election] = true
	if _, ok := m.leading[election]; !ok {
		m.leading[election] = false
	}
	m.mu.Unlock()
	if !seen {
		m.terms.WithLabelValues(election)
		for _, r := range []string{"resigned", "preempted", "lease_lost", "stopped"} {
			m.revocations.WithLabelValues(election, r)
		}
	}
}

func (m *Metrics) setLeading(election string, v bool) {
	m.mu.Lock()
	m.leading[election] = v
	m.mu.Unlock()
}

// Track makes is_leader for e's election read e.IsLeader() at each scrape,
// instead of following the events (see the package documentation's Timing
// section). With several Electors of one election tracked, is_leader is 1
// when any of them leads.
func (m *Metrics) Track(e *elector.Elector) {
	name := e.Election()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tracked[name] = append(m.tracked[name], e)
	if _, ok := m.leading[name]; !ok {
		m.leading[name] = false
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.isLeader
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// collectors returns the vectors Describe and Collect pass through.
func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.terms, m.revocations, m.campaign, m.renew, m.release, m.termLength}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	values := make(map[string]float64, len(m.leading))
	for name, v := range m.leading {
		if es, ok := m.tracked[name]; ok {
			v = false
			for _, e := range es {
				v = v || e.IsLeader()
			}
		}
		values[name] = 0
		if v {
			values[name] = 1
		}
	}
	m.mu.Unlock()
	for name, v := range values {
		ch <- prometheus.MustNewConstMetric(m.isLeader, prometheus.GaugeValue, v, name)
	}
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}
