package compare

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// FormatDuration formats d for a table: two decimals of a millisecond under
// 10ms, one under a second, seconds with two decimals above.
func FormatDuration(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", ms(d))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", ms(d))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

// cell is one table cell of result r, stat one of p50 p95 p99 max errors,
// "per s" and statReq.
func cell(r *Result, stat string) string {
	if r == nil || r.Skipped != "" {
		return "-"
	}
	switch stat {
	case "errors":
		return fmt.Sprintf("%d of %d", r.Errors, r.Errors+len(r.Samples))
	case "per s":
		return fmt.Sprintf("%.0f", r.PerSecond)
	case statHeld:
		return fmt.Sprint(r.Held)
	case statReq:
		if r.Requests == nil {
			return "not counted"
		}
		return formatReq(r.Requests.PerHeld)
	}
	if len(r.Samples) == 0 {
		return "-"
	}
	return FormatDuration(map[string]time.Duration{"p50": r.P50, "p95": r.P95, "p99": r.P99, "max": r.Max}[stat])
}

// statReq is the row of [Renew] giving RequestCount.PerHeld, statHeld the
// one giving Result.Held.
const (
	statReq  = "req/held"
	statHeld = "held"
)

// formatReq formats requests per held election per round with three
// significant digits ("5", "1.02", "0.00133").
func formatReq(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// stats lists the rows of a workload in the text table.
func stats(workload string) []string {
	s := []string{"p50", "p95", "p99", "max"}
	if workload == Throughput || workload == Renew {
		s = append(s, "per s")
	}
	if workload == Renew {
		s = append(s, statHeld, statReq)
	}
	return append(s, "errors")
}

// WriteTable writes the report as a text table, systems as columns, and
// under it each backend's TTL floor, fencing-token source and safety
// assumptions.
func (r *Report) WriteTable(w io.Writer) error {
	o := r.Options
	fmt.Fprintf(w, "elect compare: TTL %v, %d trials (failover %d), %d goroutines, renew with %d held; prefix %s; took %v\n",
		o.TTL, o.Trials, o.FailoverTrials, o.Concurrency, o.Held, r.Prefix, r.Elapsed.Round(time.Second))
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: partial results")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"workload", ""}
	for _, b := range r.Backends {
		head = append(head, b.Name)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, wl := range Workloads {
		for i, st := range stats(wl) {
			row := []string{"", st}
			if i == 0 {
				row[0] = wl
			}
			for _, b := range r.Backends {
				row = append(row, cell(b.Result(wl), st))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	row := []string{"TTL floor", ""}
	for _, b := range r.Backends {
		row = append(row, floorText(b))
	}
	fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: requests the renewing client sent per held election per renewal interval (TTL/3 = %v)\n\n",
		statReq, (o.TTL / 3).Round(time.Millisecond))
	for _, b := range r.Backends {
		r.writeNotes(w, b)
	}
	return nil
}

func floorText(b *BackendReport) string {
	if b.TTLFloor == 0 {
		return "none granted"
	}
	return b.TTLFloor.String()
}

// writeNotes writes a backend's token source, safety line, TTL floor and
// whatever failed.
func (r *Report) writeNotes(w io.Writer, b *BackendReport) {
	fmt.Fprintf(w, "%s: fencing token: %s; TTL floor %s (of %v tried)\n", b.Name, orUnknown(b.TokenSource), floorText(b), r.Options.FloorTTLs)
	fmt.Fprintf(w, "  safety: %s\n", orUnknown(b.Safety))
	if b.RequestRate > 0 {
		fmt.Fprintf(w, "  client rate limit: %s requests/s; %s\n", formatReq(b.RequestRate), heldNote(r.Options.Held, b))
	}
	if b.FloorError != "" {
		fmt.Fprintf(w, "  TTL floor search: %s\n", b.FloorError)
	}
	for _, res := range b.Results {
		if res.Errors > 0 {
			fmt.Fprintf(w, "  %s: %d errors, first: %s\n", res.Workload, res.Errors, res.FirstError)
		}
		if res.Skipped != "" {
			fmt.Fprintf(w, "  %s: not measured: %s\n", res.Workload, res.Skipped)
		}
	}
	if len(b.Leftover) > 0 {
		fmt.Fprintf(w, "  LEFT BEHIND: elections still led: %q\n", b.Leftover)
	}
	if b.CleanupError != "" {
		fmt.Fprintf(w, "  cleanup: %s\n", b.CleanupError)
	}
}

// heldNote says how many elections the Renew workload held on b, of held.
func heldNote(held int, b *BackendReport) string {
	res := b.Result(Renew)
	if res == nil || res.Held == 0 || res.Held >= held {
		return fmt.Sprintf("renew held all %d elections", held)
	}
	return fmt.Sprintf("renew held %d of %d elections, as many as half that rate renews every TTL/3 (one request each)", res.Held, held)
}

func orUnknown(s string) string {
	if s == "" {
		return "(not known for this target)"
	}
	return s
}

// WriteMarkdown writes the comparison as a Markdown table, systems as
// columns: the form of a project README's which-backend table.
func (r *Report) WriteMarkdown(w io.Writer) error {
	row := func(name string, f func(b *BackendReport) string) {
		cells := []string{name}
		for _, b := range r.Backends {
			cells = append(cells, f(b))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	row("", func(b *BackendReport) string { return b.Name })
	row("---", func(*BackendReport) string { return "---" })
	row("fencing token", func(b *BackendReport) string { return orUnknown(b.TokenSource) })
	row("TTL floor", floorText)
	pq := func(wl string) func(b *BackendReport) string {
		return func(b *BackendReport) string { return cell(b.Result(wl), "p50") + " / " + cell(b.Result(wl), "p99") }
	}
	row("acquire+release p50 / p99", pq(Acquire))
	row(fmt.Sprintf("throughput, %d goroutines on %d elections", r.Options.Concurrency, r.Options.Concurrency),
		func(b *BackendReport) string { return cell(b.Result(Throughput), "per s") + " ops/s" })
	row("graceful hand-over p50 / p99", pq(Handover))
	row(fmt.Sprintf("renew p50 / p99, %d held", r.Options.Held), func(b *BackendReport) string {
		s := pq(Renew)(b)
		if res := b.Result(Renew); res != nil && res.Held > 0 && res.Held < r.Options.Held {
			s += fmt.Sprintf(" (%d held: client limit %s req/s)", res.Held, formatReq(b.RequestRate))
		}
		return s
	})
	row(fmt.Sprintf("renew requests per held election per TTL/3 (%v)", (r.Options.TTL/3).Round(time.Millisecond)),
		func(b *BackendReport) string { return cell(b.Result(Renew), statReq) })
	pm := func(wl string) func(b *BackendReport) string {
		return func(b *BackendReport) string { return cell(b.Result(wl), "p50") + " / " + cell(b.Result(wl), "max") }
	}
	row(fmt.Sprintf("crash failover p50 / max, TTL %v", r.Options.TTL), pm(Failover))
	row(fmt.Sprintf("rebalance p50 / max, a member joins %d (%d partitions)", r.Options.Members, r.Options.Partitions), pm(Join))
	row("rebalance p50 / max, that member leaves", pm(Leave))
	row("errors", func(b *BackendReport) string {
		n := 0
		for _, res := range b.Results {
			n += res.Errors
		}
		return fmt.Sprint(n)
	})
	return nil
}
