package compare

import (
	"bytes"
	"html/template"
	"io"
	"time"
)

// page is the self-contained HTML report: inline CSS and SVG, no script,
// nothing fetched.
var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>elect compare: {{.Names}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: 70em; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.legend span { display: inline-block; margin-right: 1.5em; }
.legend i { display: inline-block; width: 1.5em; height: 0.3em; vertical-align: middle; margin-right: 0.3em; }
pre { background: #f6f6f6; padding: 1em; overflow-x: auto; white-space: pre-wrap; }
.bad { color: #b00; font-weight: bold; }
</style>
</head>
<body>
<h1>elect compare</h1>
<p>TTL {{.R.Options.TTL}}, election prefix <code>{{.R.Prefix}}</code>, started {{.Started}}, took {{.Elapsed}}.
{{if .R.Interrupted}}<span class="bad">Interrupted: partial results.</span>{{end}}</p>
<h2>Summary</h2>
<pre id="table">{{.Table}}</pre>
<p class="legend">{{range .Legend}}<span><i style="background: {{.Color}}"></i>{{.Name}}</span>{{end}}</p>
{{range .Plots}}
<section class="workload" id="{{.ID}}">
<h2>{{.Workload}}</h2>
<p>{{.About}}</p>
{{.SVG}}
</section>
{{end}}
</body>
</html>
`))

// about explains each workload under its plot.
var about = map[string]string{
	Acquire:    "One uncontended Campaign and its Release, on an election nobody else wants.",
	Throughput: "Each of the goroutines campaigns for and releases an election of its own in a loop; one sample per Campaign+Release.",
	Handover:   "From the holder's Release to the election of a candidate waiting on another client.",
	Renew:      "One Renew of one of the elections held on one client, all of them renewed every TTL/3.",
	Failover:   "From the holder's last renewal to the election of a waiting candidate, after the holder's connections were cut without a release. It cannot be shorter than the TTL.",
	Join:       "A member joins a partition group: from its start until every partition is owned by the member the placement puts it on.",
	Leave:      "That member leaves gracefully: from the end of its Run until every partition is owned as placed without it.",
}

// WriteHTML writes the report as one self-contained HTML page: the table
// of [Report.WriteTable], then for each workload an inline SVG plot of the
// latency distributions (CDFs), one curve per backend. The page loads
// nothing and runs no script.
func (r *Report) WriteHTML(w io.Writer) error {
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		return err
	}
	type legend struct{ Name, Color string }
	type plot struct {
		ID, Workload, About string
		SVG                 template.HTML
	}
	data := struct {
		R                       *Report
		Names, Started, Elapsed string
		Table                   string
		Legend                  []legend
		Plots                   []plot
	}{R: r, Started: r.Started.Format(time.RFC3339), Elapsed: r.Elapsed.Round(time.Second).String(), Table: table.String()}
	for i, b := range r.Backends {
		if i > 0 {
			data.Names += ", "
		}
		data.Names += b.Name
		data.Legend = append(data.Legend, legend{b.Name, colors[i%len(colors)]})
	}
	for _, wl := range Workloads {
		var cs []curve
		for i, b := range r.Backends {
			if res := b.Result(wl); res != nil {
				cs = append(cs, curve{name: b.Name, color: colors[i%len(colors)], samples: res.Samples})
			}
		}
		// cdfSVG escapes every text it writes; the rest is numbers.
		data.Plots = append(data.Plots, plot{ID: "w-" + template.HTMLEscapeString(wl), Workload: wl, About: about[wl],
			SVG: template.HTML(cdfSVG(wl, cs))}) // #nosec G203 -- built from escaped names and numbers
	}
	return page.Execute(w, data)
}
