// Package promelector exports an [elector.Elector]'s activity as Prometheus
// metrics, through [elector.Options.Observer]. Programs that do not import
// it do not depend on the Prometheus client.
//
//	m := promelector.New(nil)
//	prometheus.MustRegister(m)
//	e, err := elector.New(b, "jobs", &elector.Options{Observer: m.Observe})
//	...
//	m.Track(e) // is_leader follows e.IsLeader() exactly
//
// # Metrics
//
// All carry the label election; the namespace (default "elector") prefixes
// each name:
//
//	elector_is_leader                  gauge: 1 while leading, else 0
//	elector_terms_total                counter: terms started
//	elector_revocations_total          counter, label reason: terms ended, by
//	                                   reason (resigned, preempted: a yield to
//	                                   a higher priority, lease_lost, stopped)
//	elector_campaign_duration_seconds  histogram, label result (won, error):
//	                                   one campaign attempt, including time
//	                                   queued behind a leader
//	elector_renew_duration_seconds     histogram, label result (ok, error, lost)
//	elector_release_duration_seconds   histogram, label result (ok, error)
//	elector_term_duration_seconds      histogram: how long terms lasted
//
// A series appears once its election has had an event (is_leader, terms and
// revocations appear together with the first one).
//
// # Timing
//
// Without [Metrics.Track], is_leader follows the events: 1 from EventElected
// to EventEnded, the instant the term's ctx is cancelled. With Track, it is
// read from [elector.Elector.IsLeader] at each scrape, which also covers an
// Elector whose Run is not running. Term durations are measured to
// EventEnded too.
package promelector
