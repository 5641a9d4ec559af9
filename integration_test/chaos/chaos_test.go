package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/internal/testenv"
)

var (
	flagLong     = flag.Bool("chaos.long", false, "run the long campaign (make chaos) instead of the short one (make test)")
	flagSeed     = flag.Uint64("chaos.seed", 0, "seed of the nemesis schedule; 0 picks one (printed)")
	flagOut      = flag.String("chaos.out", "", "directory for the report (JSON, SVG, candidate logs); default a temporary one")
	flagCampaign = flag.String("chaos.campaigns", "redlock-aof,redlock-noaof,etcd,zookeeper", "campaigns to run; a suffix -restarts, -concurrent or -clock picks a fault mode (e.g. redlock-noaof-restarts, etcd-concurrent, redlock-noaof-clock)")
	flagFaults   = flag.Int("chaos.faults", 0, "faults per campaign (0: 100 long, 5 short)")
	flagTerms    = flag.Int("chaos.terms", 0, "terms per campaign (0: 300 long, 12 short)")
	flagRecheck  = flag.String("chaos.recheck", "", "check the <campaign>-history.jsonl files a run left in this directory instead of running campaigns")
)

// chaosTTL is the lease TTL of every campaign (ZooKeeper: the session
// timeout): the shortest all three drivers accept on the test servers (etcd
// leases are whole seconds; the ensemble's minSessionTimeout is 1 s).
const chaosTTL = time.Second

// TestChaos runs a campaign per driver (Redlock twice: nodes with AOF and
// without) against the real test servers, checks each history and reports.
// It fails on any violation, except those the redlock driver documents for
// nodes that restart without persistence.
func TestChaos(t *testing.T) {
	if *flagRecheck != "" {
		recheck(t, *flagRecheck)
		return
	}
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	faults, terms, maxDur := 5, 12, 40*time.Second
	if *flagLong {
		faults, terms, maxDur = 100, 300, 15*time.Minute
	}
	if *flagFaults > 0 {
		faults = *flagFaults
	}
	if *flagTerms > 0 {
		terms = *flagTerms
	}
	out := *flagOut
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	command := fmt.Sprintf("scripts/chaos.sh -seed %d", seed)
	if !*flagLong {
		command = fmt.Sprintf("go test ./chaos -run TestChaos -v -chaos.seed %d", seed)
	}
	t.Logf("chaos: seed %d; rerun: %s; report in %s", seed, command, out)

	script := testenv.Scripts(t)
	bin := filepath.Join(t.TempDir(), "candidate")
	if b, err := exec.Command("go", "build", "-o", bin, "./candidate").CombinedOutput(); err != nil {
		t.Fatalf("build candidate: %v\n%s", err, b)
	}

	rep := Report{Seed: seed, Command: command, Violations: map[string][]Violation{}}
	for i, name := range strings.Split(*flagCampaign, ",") {
		cfg := Config{
			Name: name, Script: script, Binary: bin, Candidates: 3, TTL: chaosTTL,
			Bound: 3*chaosTTL + 3*time.Second, Seed: seed + uint64(i),
			MinFaults: faults, MinTerms: terms, MaxDuration: maxDur, Dir: out, Logf: t.Logf,
		}
		documented := func(string) bool { return false }
		base, mode := SplitCampaign(name)
		switch base {
		case "redlock-aof", "redlock-noaof":
			cfg.Driver, cfg.ServerKind, cfg.Addrs, cfg.AOF = "redlock", "redis", testenv.RedisAddrs(t), base == "redlock-aof"
			documented = DocumentedRedlock
		case "etcd":
			cfg.Driver, cfg.ServerKind, cfg.Addrs = "etcd", "etcd", testenv.EtcdEndpoints(t)
		case "zookeeper":
			cfg.Driver, cfg.ServerKind, cfg.Addrs = "zookeeper", "zk", testenv.ZKServers(t)
		default:
			t.Fatalf("unknown campaign %q in -chaos.campaigns", name)
		}
		var err error
		if cfg.Faults, err = ModeFaults(mode, cfg.ServerKind, cfg.AOF); err != nil {
			t.Fatalf("campaign %q: %v", name, err)
		}
		if cfg.Clock = mode == "clock"; cfg.Clock {
			documented = DocumentedClock
		}
		t.Run(name, func(t *testing.T) {
			cfg.Logf = t.Logf
			ctx, cancel := context.WithTimeout(context.Background(), maxDur+5*time.Minute)
			defer cancel()
			began := time.Now()
			events, err := Run(ctx, cfg)
			if err != nil {
				t.Errorf("campaign: %v", err)
			}
			r := Check(events, Params{Bound: cfg.Bound, Documented: documented})
			if cfg.Clock {
				FailStaleWrites(&r)
			}
			rows := Rows(name, r)
			rep.Rows = append(rep.Rows, rows...)
			rep.Violations[name] = r.Violations
			var table strings.Builder
			WriteTable(&table, rows)
			t.Logf("%s: %v, %d events, %d writes accepted, %d refused\n%s", name, time.Since(began).Round(time.Second),
				len(events), r.Accepted, r.Refused, table.String())
			if err := WriteSVG(filepath.Join(out, name+".svg"), name+" seed "+fmt.Sprint(cfg.Seed), r); err != nil {
				t.Error(err)
			}
			if err := writeEvents(filepath.Join(out, name+"-history.jsonl"), events); err != nil {
				t.Error(err)
			}
			for _, v := range r.Violations {
				if v.Documented {
					t.Logf("documented violation (redlock/doc.go # Safety):\n%s", FormatViolation(v))
				} else {
					t.Errorf("VIOLATION (seed %d):\n%s", cfg.Seed, FormatViolation(v))
				}
			}
			all := rows[len(rows)-1]
			if all.Terms < terms || all.Faults < faults {
				t.Errorf("campaign too small: %d terms and %d faults, want at least %d and %d", all.Terms, all.Faults, terms, faults)
			}
		})
	}
	var table strings.Builder
	WriteTable(&table, rep.Rows)
	t.Logf("chaos report (seed %d, %s):\n%s", seed, command, table.String())
	if err := WriteJSON(filepath.Join(out, "report.json"), rep); err != nil {
		t.Error(err)
	}
	if err := os.WriteFile(filepath.Join(out, "report.txt"), []byte(table.String()), 0o644); err != nil {
		t.Error(err)
	}
}

// recheck checks the histories a run saved in dir and prints the table.
func recheck(t *testing.T, dir string) {
	var rows []Row
	for _, name := range strings.Split(*flagCampaign, ",") {
		b, err := os.ReadFile(filepath.Join(dir, name+"-history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var h History
		for _, line := range strings.Split(string(b), "\n") {
			h.AddLine([]byte(line))
		}
		documented := func(string) bool { return false }
		if strings.HasPrefix(name, "redlock") {
			documented = DocumentedRedlock
		}
		_, mode := SplitCampaign(name)
		if mode == "clock" {
			documented = DocumentedClock
		}
		r := Check(h.Events(), Params{Bound: 3*chaosTTL + 3*time.Second, Documented: documented})
		if mode == "clock" {
			FailStaleWrites(&r)
		}
		rows = append(rows, Rows(name, r)...)
		for _, v := range r.Violations {
			t.Logf("%s: documented=%v %s", name, v.Documented, strings.SplitN(FormatViolation(v), "\n", 2)[0])
		}
	}
	var table strings.Builder
	WriteTable(&table, rows)
	t.Logf("recheck of %s:\n%s", dir, table.String())
}

// writeEvents writes the history as JSON lines, for a closer look.
func writeEvents(path string, events []Event) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for _, ev := range events {
		fmt.Fprintf(f, `{"mono":%d,"proc":%q,"kind":%q,"token":%d,"ok":%v,"note":%q}`+"\n", ev.Mono, ev.Proc, ev.Kind, ev.Token, ev.OK, ev.Note)
	}
	return f.Close()
}
