package backend_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/leaderkit/elector/backend"
)

// ValidateElection gives the rules every backend shares; its errors wrap
// ErrInvalid, the permanent-error sentinel of the contract.
func ExampleValidateElection() {
	for _, name := range []string{"jobs/eu", "jobs//eu", "../etc"} {
		err := backend.ValidateElection(name)
		fmt.Printf("%q: %v (permanent: %v)\n", name, err, errors.Is(err, backend.ErrInvalid))
	}
	// Output:
	// "jobs/eu": <nil> (permanent: false)
	// "jobs//eu": invalid request: election name "jobs//eu" has an empty segment (leading, trailing or doubled '/') (permanent: true)
	// "../etc": invalid request: election name "../etc" has a ".." segment (permanent: true)
}

// Every driver computes a lease's local deadline the same way: from when the
// acquiring request was sent, the TTL, and the drift allowance.
func ExampleLeaseDeadline() {
	sent := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	d := backend.LeaseDeadline(sent, 10*time.Second, backend.DefaultDriftFactor)
	fmt.Println(d.Sub(sent))
	// Output: 9.898s
}
