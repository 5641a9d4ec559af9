// Command preferred runs the two recipes of preferred leaders
// (docs/preferred-leaders.md) one after the other, each on an election of
// its own, and prints who is elected with which token, who yields and why,
// and the registry of candidates with their priorities.
//
//	cd examples && go run ./preferred
//
// Rolling upgrade: two replicas of v1 run at priority 1. A replica of v2
// starts at priority 2; the v1 leader, freshly elected, leads its MinTerm
// and then hands the election over to it, and the v1 replicas stand aside.
// A second v2 replica, of the same priority, does not take over.
//
// Zone affinity: the replicas of zone a run at priority 2, the one of zone
// b at priority 1, and a zone-a replica leads. When zone a is lost (its
// replicas crash, leaving their lease and registry entries to expire), the
// zone-b replica is elected about a TTL later; when a zone-a replica starts
// again, it takes the election back once the zone-b leader has led its
// MinTerm.
//
// The program checks each step as it happens, and that no replica is
// elected while another one's OnElected still runs. Every replica is a
// process of its own on the in-memory backend (backend/memory); on Redis,
// etcd, ZooKeeper or Kubernetes Leases each would construct its driver
// instead, and nothing else would change.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

const (
	ttl     = time.Second
	minTerm = 1500 * time.Millisecond
)

func main() {
	if _, err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "preferred:", err)
		os.Exit(1)
	}
}

// timings are the durations run measured, which its test checks on a fake
// clock.
type timings struct {
	upgradeTerm time.Duration // v1-a's term, from its start to its yield
	failover    time.Duration // from zone a's crash to the zone-b replica's election
	standbyTerm time.Duration // the zone-b replica's term, from its start to its yield
}

// run plays both recipes, printing to w.
func run(w io.Writer) (timings, error) {
	var tm timings
	fmt.Fprintf(w, "== rolling upgrade (TTL %v, MinTerm %v)\n", ttl, minTerm)
	if err := rollingUpgrade(w, &tm); err != nil {
		return tm, fmt.Errorf("rolling upgrade: %w", err)
	}
	fmt.Fprintf(w, "\n== zone affinity (TTL %v, MinTerm %v)\n", ttl, minTerm)
	if err := zoneAffinity(w, &tm); err != nil {
		return tm, fmt.Errorf("zone affinity: %w", err)
	}
	return tm, nil
}

// rollingUpgrade replaces two replicas of v1 with two of v2.
func rollingUpgrade(w io.Writer, tm *timings) (err error) {
	s := newStage(w, "upgrade")
	defer func() {
		s.stopAll(nil) // what a failed step left running
		s.close()
		err = errors.Join(err, s.check())
	}()

	v1a := s.start("v1-a", "v1", 1)
	t1, err := v1a.elected()
	if err != nil {
		return err
	}
	s.say("%v: elected, token %d", v1a, t1.Token)
	v1b := s.start("v1-b", "v1", 1)
	if _, err := s.until(campaigning(v1b)); err != nil {
		return err
	}
	s.say("%v: campaigns", v1b)

	// The upgrade starts the first replica of v2.
	v2a := s.start("v2-a", "v2", 2)
	s.say("%v: starts", v2a)
	ev, err := v1a.yielded()
	if err != nil {
		return err
	}
	tm.upgradeTerm = ev.at.Sub(ev.term.Start)
	s.say("%v: term %d ends once it has led its MinTerm: %v", v1a, ev.term.Token, ev.reason)
	t2, err := v2a.elected()
	if err != nil {
		return err
	}
	s.say("%v: elected, token %d, after the OnElected of %s returned", v2a, t2.Token, v1a.name)
	list, err := s.until(aside(v1a), aside(v1b), campaigning(v2a))
	if err != nil {
		return err
	}
	s.say("%s", registry(list))

	// The second replica of v2 starts while v2-a is freshly elected.
	v2b := s.start("v2-b", "v2", 2)
	if _, err := s.until(campaigning(v2b)); err != nil {
		return err
	}
	s.say("%v: campaigns", v2b)
	if err := s.watch(time.Until(t2.Start.Add(minTerm + ttl/2))); err != nil { // past v2-a's MinTerm
		return err
	}
	if err := s.leads(v2a, t2.Token); err != nil {
		return err
	}
	s.say("%v: still leads past its MinTerm, token %d: an equal priority does not preempt", v2a, t2.Token)

	// The upgrade stops the v1 replicas.
	for _, r := range []*replica{v1a, v1b} {
		if err := r.stop(); err != nil {
			return err
		}
	}
	list, err = s.candidates()
	if err != nil {
		return err
	}
	s.say("v1-a, v1-b: stopped; %s", registry(list))
	if err := s.leads(v2a, t2.Token); err != nil {
		return err
	}
	return s.stopAll(v2a)
}

// zoneAffinity loses the preferred zone and gets it back.
func zoneAffinity(w io.Writer, tm *timings) (err error) {
	s := newStage(w, "zone-affinity")
	defer func() {
		s.stopAll(nil) // what a failed step left running
		s.close()
		err = errors.Join(err, s.check())
	}()

	a1 := s.start("a-1", "zone a", 2)
	t1, err := a1.elected()
	if err != nil {
		return err
	}
	s.say("%v: elected, token %d", a1, t1.Token)
	a2 := s.start("a-2", "zone a", 2)
	b1 := s.start("b-1", "zone b", 1)
	list, err := s.until(campaigning(a1), campaigning(a2), aside(b1))
	if err != nil {
		return err
	}
	s.say("%v: campaigns", a2)
	s.say("%v: stands aside", b1)
	s.say("%s", registry(list))

	// Zone a is lost.
	crashed := time.Now()
	a1.crash()
	a2.crash()
	s.say("zone a lost: a-1 and a-2 crash; a-1's lease and their entries stay until they expire")
	t2, err := b1.elected()
	if err != nil {
		return err
	}
	tm.failover = time.Since(crashed)
	s.say("%v: elected, token %d, about a TTL after the crash", b1, t2.Token)

	// A replica of zone a starts again: a new process.
	a1 = s.start("a-1", "zone a", 2)
	s.say("%v: restarts", a1)
	ev, err := b1.yielded()
	if err != nil {
		return err
	}
	tm.standbyTerm = ev.at.Sub(ev.term.Start)
	s.say("%v: term %d ends once it has led its MinTerm: %v", b1, ev.term.Token, ev.reason)
	t3, err := a1.elected()
	if err != nil {
		return err
	}
	s.say("%v: elected, token %d, after the OnElected of %s returned", a1, t3.Token, b1.name)
	if err := s.leads(a1, t3.Token); err != nil {
		return err
	}
	return s.stopAll(a1)
}
