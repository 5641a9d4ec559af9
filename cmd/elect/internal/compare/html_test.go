package compare_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/cmd/elect/internal/compare"
)

// memReport returns the report of a short run on two in-memory stores.
func memReport(t *testing.T) *compare.Report {
	var rep *compare.Report
	synctest.Test(t, func(t *testing.T) { rep, _ = runMem(t, compare.Short()) })
	return rep
}

// svgPlot is the part of a CDF plot the test reads.
type svgPlot struct {
	Workload string `xml:"data-workload,attr"`
	Series   []struct {
		Backend string `xml:"data-backend,attr"`
		Points  string `xml:"points,attr"`
	} `xml:"polyline"`
}

// TestHTMLStructure: the page has one well-formed SVG CDF plot per
// workload, a curve per backend in each, and loads nothing from elsewhere.
func TestHTMLStructure(t *testing.T) {
	rep := memReport(t)
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	checkPage(t, page.String(), len(rep.Backends))
}

func checkPage(t *testing.T, page string, backends int) {
	t.Helper()
	for _, bad := range []string{"<script", "<link", "src=", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q; want a self-contained page", bad)
		}
	}
	svgs := regexp.MustCompile(`(?s)<svg class="cdf".*?</svg>`).FindAllString(page, -1)
	if len(svgs) != len(compare.Workloads) {
		t.Fatalf("%d CDF plots; want one per workload (%d)", len(svgs), len(compare.Workloads))
	}
	for i, s := range svgs {
		var p svgPlot
		if err := xml.Unmarshal([]byte(s), &p); err != nil {
			t.Fatalf("plot %d is not well-formed SVG: %v", i, err)
		}
		if p.Workload != compare.Workloads[i] || len(p.Series) != backends {
			t.Errorf("plot %d: workload %q with %d curves; want %q with %d", i, p.Workload, len(p.Series), compare.Workloads[i], backends)
		}
		for _, c := range p.Series {
			if n := len(strings.Fields(c.Points)); n < 2 {
				t.Errorf("plot %s, curve %s: %d points; want a line", p.Workload, c.Backend, n)
			}
		}
	}
}

// TestHTMLInBrowser opens the page in headless Chromium and checks that the
// browser built the plots: the DOM it dumps has every SVG and curve. Outside
// CI it skips when chromium is not installed (TestHTMLStructure checks the
// same without a browser); under CI=true a missing chromium fails the test:
// scripts/servers.sh install (which make test runs) installs the Debian
// package.
func TestHTMLInBrowser(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		msg := "chromium not installed (scripts/servers.sh install, or apt-get install chromium)"
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatal(msg + " — under CI the browser check is required")
		}
		t.Skip(msg + "; TestHTMLStructure checks the page without a browser")
	}
	rep := memReport(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	// The dumped DOM is the browser's serialisation: the SVG elements it
	// parsed, with their attributes, or nothing if it could not.
	checkPage(t, string(dom), len(rep.Backends))
}

// TestTableShape: the text table has the systems as columns, the rows of
// every workload, and under it each backend's token source, safety line and
// TTL floor; the Markdown table has a column per system.
func TestTableShape(t *testing.T) {
	rep := memReport(t)
	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	lines := strings.Split(text, "\n")
	if f := strings.Fields(lines[1]); len(f) != 3 || f[0] != "workload" || f[1] != "mem-a" || f[2] != "mem-b" {
		t.Errorf("header %q; want workload mem-a mem-b", lines[1])
	}
	for _, want := range append(compare.Workloads, "p50", "p95", "p99", "max", "errors", "0 of 10", "TTL floor",
		"mem-a: fencing token: a counter in memory; TTL floor 100ms", "safety: one process") {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	out.Reset()
	if err := rep.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if n := strings.Count(l, " | "); n != 2 {
			t.Errorf("Markdown line %d %q has %d inner separators; want 2 (label + two systems)", i, l, n)
		}
	}
}
