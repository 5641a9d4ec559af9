//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/partition"
)

const partitionsHead = `Usage: elect partitions [flags]

Print who owns what in a group of partitions shared with package
github.com/leaderkit/elector/partition: each member with its weight, the
partitions it owns and the number placement gives it, then each partition
with its owner, fencing token and placed member. Exit 0 when every
partition is owned, 1 when some are not, 2 for bad flags, 3 when the
backend cannot be read. It warns when the group does not look like one of
--partitions partitions (partition N has a holder, or the last ones have
none while the members own the others).
`

// partitionsConfig holds the settings of elect partitions.
type partitionsConfig struct {
	backendURL string
	group      string
	n          int
	json       bool
	timeout    time.Duration
}

func partitionsFlags(c *partitionsConfig) *flag.FlagSet {
	fs := newFlagSet("partitions")
	fs.StringVar(&c.backendURL, "backend", "", "backend `URL`: redis://h1,h2,h3 | etcd://h1,h2 | zk://h1,h2 | kube://?namespace=NS (required)")
	fs.StringVar(&c.group, "group", "", "`name` of the group, as given to partition.New (required)")
	fs.IntVar(&c.n, "partitions", 0, "`number` of partitions of the group, as given to partition.New (required)")
	fs.BoolVar(&c.json, "json", false, "print the table as one JSON object")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "give up on the backend after this long")
	return fs
}

func partitionsMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := new(partitionsConfig)
	fs := partitionsFlags(c)
	if err := parse(fs, args, stdout, partitionsHead); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return exitf(exitUsage, "partitions: unexpected argument %q", fs.Arg(0))
	case c.backendURL == "":
		return exitf(exitUsage, "partitions: no backend: set --backend or ELECT_BACKEND to a URL such as redis://127.0.0.1:6379")
	case c.group == "" || c.n < 1:
		return exitf(exitUsage, "partitions: set --group and --partitions (at least 1) as the members pass them to partition.New")
	case c.n > partition.MaxPartitions:
		return exitf(exitUsage, "partitions: --partitions %d: want at most %d", c.n, partition.MaxPartitions)
	case c.timeout <= 0:
		return exitf(exitUsage, "partitions: --timeout %v: want a positive duration such as 10s", c.timeout)
	}
	if err := checkGroup(c.group, c.n); err != nil {
		return exitf(exitUsage, "partitions: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	common := common{backendURL: c.backendURL}
	common.quiet(stderr)
	b, closer, err := common.open(ctx)
	if err != nil {
		if ee := (*exitError)(nil); errors.As(err, &ee) && ee.code == exitBackend && ee.msg != "" {
			return exitf(exitBackend, "partitions: %s", ee.msg)
		}
		return err
	}
	defer closer.Close()
	t, err := partition.ReadTable(ctx, b, c.group, c.n)
	if err != nil {
		return requestFailed(ctx, "partitions", err, c.timeout, c.backendURL)
	}
	warnPartitions(ctx, stderr, b, t, c.n)
	unowned := printTable(stdout, t, c.json)
	if unowned > 0 {
		return &exitError{code: exitNoLeader}
	}
	return nil
}

// memberSuffix is the longest suffix package partition appends to a group
// name: the election of its last membership slot.
var memberSuffix = "/m/" + strconv.Itoa(partition.MembersLimit-1)

// checkGroup checks --group as package partition will: every election of
// the group (group/p/N for N below n, group/m/K for its membership slots)
// must be a valid election name.
func checkGroup(group string, n int) error {
	suffix := max(len(partition.Election("", n-1)), len(memberSuffix))
	if limit := backend.MaxElectionLen - suffix; len(group) > limit {
		return fmt.Errorf("--group is %d bytes; want at most %d (an election name has at most %d bytes, and the group's elections add a suffix of up to %d, such as %q)",
			len(group), limit, backend.MaxElectionLen, suffix, memberSuffix)
	}
	if err := backend.ValidateElection(group); err != nil {
		return fmt.Errorf("--group %q: %s", group, strings.Replace(err.Error(), "election name", "name", 1))
	}
	return nil
}

// warnPartitions warns on w when the group does not look like one of n
// partitions: partition n has a holder (the group has more), or every
// partition from some k on is unowned while members own those below it
// (the group may have k); and when two members share an identity.
func warnPartitions(ctx context.Context, w io.Writer, b backend.Backend, t *partition.Table, n int) {
	if n < partition.MaxPartitions {
		if h, err := b.Leader(ctx, partition.Election(t.Group, n)); err == nil {
			fmt.Fprintf(w, "elect: warning: partition %d of group %q has a holder (%s, token %d): the group has more than --partitions %d partitions, and the placement shown is not the members' own\n",
				n, t.Group, h.Identity, h.Token, n)
			return
		}
	}
	slots := map[string][]int{}
	for _, m := range t.Members {
		slots[m.Identity] = append(slots[m.Identity], m.Slot)
	}
	for _, m := range t.Members {
		if s := slots[m.Identity]; len(s) > 1 && s[0] == m.Slot {
			fmt.Fprintf(w, "elect: warning: members in slots %v share the identity %q: two processes run with one identity (or one restarted and its old slot has not lapsed yet); give each its own\n", s, m.Identity)
		}
	}
	k := n
	for k > 0 && t.Partitions[k-1].Owner == "" {
		k--
	}
	if k > 0 && k < n && len(t.Members) > 0 {
		fmt.Fprintf(w, "elect: warning: partitions %d to %d of group %q have no owner while the members own all below: the group may have %d partitions, not --partitions %d\n",
			k, n-1, t.Group, k, n)
	}
}

// printTable prints t as text or JSON and returns how many partitions have
// no owner.
func printTable(w io.Writer, t *partition.Table, asJSON bool) int {
	unowned := 0
	for _, o := range t.Partitions {
		if o.Owner == "" {
			unowned++
		}
	}
	if asJSON {
		out := *t
		if out.Members == nil {
			out.Members = []partition.MemberLoad{} // "members": [], not null
		}
		b, _ := json.Marshal(&out)
		fmt.Fprintf(w, "%s\n", b)
		return unowned
	}
	fmt.Fprintf(w, "group %q: %d members, %d partitions, %d unowned\n\n", t.Group, len(t.Members), len(t.Partitions), unowned)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "member\tslot\tweight\towned\tplaced\t")
	for _, m := range t.Members {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", m.Identity, m.Slot, m.Weight, m.Owned, m.Placed)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(tw, "partition\towner\ttoken\tplaced\t")
	for _, o := range t.Partitions {
		owner := o.Owner
		if owner == "" {
			owner = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t\n", o.Partition, owner, o.Token, o.Placed)
	}
	_ = tw.Flush()
	return unowned
}
