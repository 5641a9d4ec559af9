//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/leaderkit/elector/partition"
)

const partitionsHead = `Usage: elect partitions [flags]

Print who owns what in a group of partitions shared with package
github.com/leaderkit/elector/partition: each member with its weight, the
partitions it owns and the number placement gives it, then each partition
with its owner, fencing token and placed member. Exit 0 when every
partition is owned, 1 when some are not, 3 when the backend cannot be read.
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
	fs.StringVar(&c.backendURL, "backend", "", "backend `URL`: redis://h1,h2,h3 | etcd://h1,h2 | zk://h1,h2/root (required)")
	fs.StringVar(&c.group, "group", "", "`name` of the group, as given to partition.New (required)")
	fs.IntVar(&c.n, "partitions", 0, "`number` of partitions of the group, as given to partition.New (required)")
	fs.BoolVar(&c.json, "json", false, "print the table as one JSON object")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "give up on the backend after this long")
	return fs
}

func partitionsMain(ctx context.Context, args []string, stdout, _ io.Writer) error {
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
	}
	common := common{backendURL: c.backendURL}
	b, closer, err := common.open(ctx)
	if err != nil {
		return err
	}
	defer closer.Close()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	t, err := partition.ReadTable(ctx, b, c.group, c.n)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return exitf(exitBackend, "partitions: no answer from the backend within --timeout %v: %v", c.timeout, err)
	case err != nil:
		return exitf(exitBackend, "partitions: %v", err)
	}
	unowned := printTable(stdout, t, c.json)
	if unowned > 0 {
		return &exitError{code: exitNoLeader}
	}
	return nil
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
		b, _ := json.Marshal(t)
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
