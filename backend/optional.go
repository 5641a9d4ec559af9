package backend

// TrailingLease is an optional interface a [Lease] implements when its
// Deadline trails the proof of its last renewal by design, however fresh
// that proof: a ZooKeeper lease's Deadline counts a server's answer only
// once a later answer confirms that the ensemble's leader could have
// counted it, and the session's pings move it between renewals. Scheduled
// from such a Deadline, a renewal would always look due. The portable layer
// renews such a lease once per renew interval instead, on a grid shared by
// the leases of the process, so that the leases sharing a session share one
// request, and always before the lease's step-down point.
//
// A wrapper that holds leases of other drivers (such as a migrating
// Backend's) implements it and reports whether any lease it wraps trails.
type TrailingLease interface {
	// DeadlineTrails reports whether the lease's Deadline trails its proof.
	DeadlineTrails() bool
}

// Warner is an optional interface a [Backend] implements when a valid
// configuration can still be weak (a Redlock over a single or an even number
// of Redis masters). A driver does not log them itself (it logs nothing
// unless its Options.Logger is set); programs such as elect log these
// warnings at start. A wrapper over other Backends implements it and returns
// the warnings of every Backend it wraps.
type Warner interface {
	// Warnings returns advice about the configuration, one sentence each,
	// or nil.
	Warnings() []string
}
