package chaos

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one line of the report: one campaign (driver and mode) and one
// fault kind ("none" for terms before the first fault, "all" for the
// campaign's total).
type Row struct {
	// Campaign and Fault name the row.
	Campaign string `json:"campaign"`
	Fault    string `json:"fault"`
	// Terms counts the terms begun after a fault of this kind (and before
	// the next fault); Handovers those of them won by another process than
	// the term before.
	Terms     int `json:"terms"`
	Handovers int `json:"handovers"`
	// Faults counts the faults of this kind injected.
	Faults int `json:"faults"`
	// Overlaps, StaleOK, TokenOrder and Slow count violations of each
	// check ([ViolationOverlap], [ViolationStaleWrite],
	// [ViolationTokenOrder], [ViolationRecovery] and [ViolationGap]);
	// Documented how many of them the driver documents.
	Overlaps   int `json:"overlaps"`
	StaleOK    int `json:"stale_writes_accepted"`
	TokenOrder int `json:"token_order_violations"`
	Slow       int `json:"slow_recoveries"`
	// Late counts [ViolationLateWon] and [ViolationLateNotRefused]: a
	// replica left on the old store after a migration's marker that won or
	// was not refused.
	Late int `json:"late_replica_violations"`
	// Preference counts [ViolationLowerLeads] and [ViolationNeedlessYield].
	Preference int `json:"preference_violations"`
	Documented int `json:"documented_violations"`
	// StaleRefuse counts writes the fence refused after a fault of this
	// kind (and before the next): stale leaders stopped.
	StaleRefuse int `json:"stale_writes_refused"`
	// WorstNew and MedianNew are the longest and median times from a fault
	// to the next term's start; WorstRecov the longest time from a heal
	// until a leader existed.
	WorstNew   time.Duration `json:"worst_new_leader_ns"`
	MedianNew  time.Duration `json:"median_new_leader_ns"`
	WorstRecov time.Duration `json:"worst_recovery_ns"`
}

// Rows summarises r per fault kind, plus an "all" row.
func Rows(campaign string, r Result) []Row {
	rows := map[string]*Row{}
	get := func(kind string) *Row {
		if rows[kind] == nil {
			rows[kind] = &Row{Campaign: campaign, Fault: kind}
		}
		return rows[kind]
	}
	all := get("all")
	news := map[string][]time.Duration{}
	for i, t := range r.Terms {
		kind := "none"
		if t.faultIndex >= 0 {
			kind = r.Faults[t.faultIndex].Kind
		}
		for _, row := range []*Row{get(kind), all} {
			row.Terms++
			if i > 0 && r.Terms[i-1].Key == t.Key && r.Terms[i-1].Proc != t.Proc {
				row.Handovers++
			}
		}
	}
	for _, i := range r.refusedFault {
		kind := "none"
		if i >= 0 {
			kind = r.Faults[i].Kind
		}
		get(kind).StaleRefuse++
		all.StaleRefuse++
	}
	for _, f := range r.Faults {
		for _, row := range []*Row{get(f.Kind), all} {
			row.Faults++
			row.WorstRecov = max(row.WorstRecov, f.Recovery)
		}
		if f.NewLeader >= 0 {
			news[f.Kind] = append(news[f.Kind], f.NewLeader)
			news["all"] = append(news["all"], f.NewLeader)
		}
	}
	for kind, ds := range news {
		slices.Sort(ds)
		rows[kind].WorstNew, rows[kind].MedianNew = ds[len(ds)-1], ds[len(ds)/2]
	}
	for _, v := range r.Violations {
		for _, row := range []*Row{get(v.Fault), all} {
			if v.Documented {
				row.Documented++
			}
			switch v.Kind {
			case ViolationOverlap:
				row.Overlaps++
			case ViolationStaleWrite:
				row.StaleOK++
			case ViolationTokenOrder:
				row.TokenOrder++
			case ViolationRecovery, ViolationGap, ViolationSlowHandover, ViolationSlowTakeover:
				row.Slow++
			case ViolationLateWon, ViolationLateNotRefused:
				row.Late++
			case ViolationLowerLeads, ViolationNeedlessYield:
				row.Preference++
			}
		}
	}
	var out []Row
	for _, row := range rows {
		out = append(out, *row)
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].Fault == "all") != (out[j].Fault == "all") {
			return out[j].Fault == "all"
		}
		return out[i].Fault < out[j].Fault
	})
	return out
}

// WriteTable prints rows as an aligned plain-text table.
func WriteTable(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "campaign\tfault\tterms\thand-overs\tfaults\toverlaps\tstale ok\tstale refused\ttoken order\tslow recov\tlate\tpreference\tdocumented\tnew leader worst\tmedian\trecovery worst\t")
	for _, r := range rows {
		d := func(d time.Duration) string {
			if r.Faults == 0 {
				return "-"
			}
			return d.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", r.Campaign, r.Fault, r.Terms, r.Handovers,
			r.Faults, r.Overlaps, r.StaleOK, r.StaleRefuse, r.TokenOrder, r.Slow, r.Late, r.Preference, r.Documented,
			d(r.WorstNew), d(r.MedianNew), d(r.WorstRecov))
	}
	_ = tw.Flush()
}

// Report is the JSON report of one run.
type Report struct {
	// Seed and Command say how to run it again.
	Seed    uint64 `json:"seed"`
	Command string `json:"command"`
	// Rows are every campaign's [Rows].
	Rows []Row `json:"rows"`
	// Violations holds each campaign's violations, by campaign name.
	Violations map[string][]Violation `json:"violations"`
	// Keys holds the hand-over figures of the keyed campaigns (partitions,
	// migrations).
	Keys []CampaignKeys `json:"keys,omitempty"`
	// Priority holds the preference figures of the priority campaigns, by
	// campaign name.
	Priority map[string]PriorityStats `json:"priority,omitempty"`
}

// CampaignKeys are one keyed campaign's [KeyStats].
type CampaignKeys struct {
	Campaign string `json:"campaign"`
	KeyStats
}

// WriteJSON writes rep to path, indented.
func WriteJSON(path string, rep Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// FormatViolation renders v and its context for a log.
func FormatViolation(v Violation) string {
	var b strings.Builder
	doc := ""
	if v.Documented {
		doc = " [documented]"
	}
	fmt.Fprintf(&b, "%s at %s (after fault %s)%s: %s\n", v.Kind, ms(v.Mono), v.Fault, doc, v.Detail)
	for _, ev := range v.Context {
		mark := " "
		if ev.Mono == v.Mono {
			mark = ">"
		}
		fmt.Fprintf(&b, "   %s %+9.3fms %-8s %-9s token=%d ok=%v %s\n", mark, float64(ev.Mono-v.Mono)/1e6, ev.Proc, ev.Kind, ev.Token, ev.OK, ev.Note)
	}
	return b.String()
}

// WriteSVG draws the leadership timeline of r: one row per process, a bar
// per term (labelled with its token; red when it overlaps another), shaded
// bands for faults, and red ticks for violations.
func WriteSVG(path, title string, r Result) error {
	if len(r.Terms) == 0 {
		return os.WriteFile(path, []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), 0o644)
	}
	t0, t1 := r.Terms[0].Start, r.Terms[0].End
	for _, t := range r.Terms {
		t0, t1 = min(t0, t.Start), max(t1, t.End)
	}
	for _, f := range r.Faults {
		t0, t1 = min(t0, f.Start), max(t1, f.Heal)
	}
	var procs []string
	row := map[string]int{}
	for _, t := range r.Terms {
		if _, ok := row[t.Proc]; !ok {
			row[t.Proc] = len(procs)
			procs = append(procs, t.Proc)
		}
	}
	const (
		left, rowH, top = 90.0, 22.0, 40.0
		pxPerSec        = 40.0
	)
	x := func(t int64) float64 { return left + float64(t-t0)/1e9*pxPerSec }
	width := x(t1) + 20
	height := top + rowH*float64(len(procs)) + 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="monospace" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="4" y="16" font-size="13">%s — %d terms, %d faults, %d violations (time in s)</text>`+"\n",
		html.EscapeString(title), len(r.Terms), len(r.Faults), len(r.Violations))
	for s := 0; float64(s) <= float64(t1-t0)/1e9; s += 10 {
		xs := left + float64(s)*pxPerSec
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/><text x="%.1f" y="%.0f" fill="#888">%d</text>`+"\n",
			xs, top-8, xs, height-20, xs+2, height-8, s)
	}
	for _, f := range r.Faults {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#f5c542" opacity="0.3"><title>%s %s</title></rect>`+"\n",
			x(f.Start), top-6, max(x(f.Heal)-x(f.Start), 1), rowH*float64(len(procs))+6, html.EscapeString(f.Kind), html.EscapeString(f.Target))
	}
	for i, p := range procs {
		fmt.Fprintf(&b, `<text x="4" y="%.0f">%s</text>`+"\n", top+rowH*float64(i)+14, html.EscapeString(p))
	}
	bad := map[int64]bool{}
	for _, v := range r.Violations {
		bad[v.Mono] = true
	}
	for _, t := range r.Terms {
		color := "#3a7bd5"
		if bad[t.Start] {
			color = "#d53a3a"
		}
		y := top + rowH*float64(row[t.Proc])
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s"><title>%s token %d %s..%s (%s)</title></rect>`+"\n",
			x(t.Start), y+2, max(x(t.End)-x(t.Start), 0.5), rowH-6, color, html.EscapeString(t.Proc), t.Token, ms(t.Start), ms(t.End), t.EndReason)
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="red" stroke-width="2"><title>%s</title></line>`+"\n",
			x(v.Mono), top-10, x(v.Mono), height-20, html.EscapeString(v.Kind+": "+v.Detail))
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
