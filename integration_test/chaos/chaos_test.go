package chaos

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector/internal/testenv"
)

var (
	flagLong     = flag.Bool("chaos.long", false, "run the long campaign (make chaos) instead of the short one (make test)")
	flagSeed     = flag.Uint64("chaos.seed", 0, "seed of the nemesis schedule; 0 picks one (printed)")
	flagOut      = flag.String("chaos.out", "", "directory for the report (JSON, SVG, candidate logs); default a temporary one")
	flagCampaign = flag.String("chaos.campaigns", "redlock-aof,redlock-noaof,etcd,zookeeper,kube", "campaigns to run; kube runs on Kubernetes Leases (the kube-apiserver over the etcd cluster); a suffix -restarts, -concurrent or -clock picks a fault mode (e.g. redlock-noaof-restarts, etcd-concurrent, redlock-noaof-clock), -partitions the partition mode (etcd-partitions), -priority preferred leaders (etcd-priority); migrate-<old>-<new> a rolling migration (migrate-redis-etcd); zookeeper-stock runs on the ensemble with ZooKeeper's stock timing")
	flagFaults   = flag.Int("chaos.faults", 0, "faults per campaign (0: 100 long, 5 short)")
	flagTerms    = flag.Int("chaos.terms", 0, "terms per campaign (0: 300 long, 12 short)")
	flagMigrate  = flag.Int("chaos.migrations", 0, "full migrations per migrate campaign (0: 20 long, 1 short)")
	flagKinds    = flag.String("chaos.kinds", "", "comma-separated fault kinds to draw from instead of the campaign's (e.g. pause-minority)")
	flagRecheck  = flag.String("chaos.recheck", "", "check the <campaign>-history.jsonl files a run left in this directory instead of running campaigns")
	flagLanes    = flag.Int("chaos.lanes", 1, "campaigns on disjoint servers (Redis; etcd and the apiserver on it; ZooKeeper) run at once, at most this many (a short campaign only; a long one runs one at a time)")
)

// chaosTTL is the lease TTL of the campaigns on Redis and etcd: the
// shortest they accept on the test servers (etcd leases are whole seconds).
const chaosTTL = time.Second

// zkTTL is the lease TTL (session timeout) of a ZooKeeper campaign on
// ensemble 1-3 (tickTime 100 ms, syncLimit 5): at least its
// zookeeper.MinSafeTTL, 1.75 s.
const zkTTL = 2 * time.Second

// zkStockTTL is the lease TTL of a zookeeper-stock campaign, on the
// ensemble with ZooKeeper's stock timing (tickTime 2 s, syncLimit 5):
// at least its zookeeper.MinSafeTTL, 30.25 s, and at most its
// maxSessionTimeout, 40 s.
const zkStockTTL = 32 * time.Second

// zkStockWindow is the stock ensemble's syncLimit × tickTime, for the
// pause-store-leader fault (ensemble 1-3 reports its own, see zkWindow).
const zkStockWindow = 10 * time.Second

// partitionTTL is the lease TTL of a partition campaign: five members
// renewing 64 partitions each through toxiproxy need more than chaosTTL on
// a 2-core host shared with other work (at 1 s and a load average of 10,
// Redlock campaigns missed their 100 ms RequestTimeout on every node).
const partitionTTL = 2 * time.Second

// kubeTTL is the lease TTL of a kube campaign: the kube driver's MinTTL
// with client-go interoperability (Options.ElectorOnly unset).
const kubeTTL = 3 * time.Second

// kubeFaultTime is what one fault of a kube campaign may take: restarting
// a killed kube-apiserver takes 20 s and more on a loaded host.
const kubeFaultTime = 40 * time.Second

// expiryGrain returns how late after its timeout the store may expire a
// dead holder's lease in campaign name: a ZooKeeper leader expires sessions
// in buckets of tickTime, rounding each expiry up to the next tick
// (ExpiryQueue.roundToNextInterval,
// https://github.com/apache/zookeeper/blob/master/zookeeper-server/src/main/java/org/apache/zookeeper/server/ExpiryQueue.java).
func expiryGrain(name string) time.Duration {
	base, _ := SplitCampaign(name)
	switch {
	case base == "zookeeper-stock":
		return 2 * time.Second // tickTime of ensemble 5-7
	case strings.Contains(name, "zookeeper"):
		return 100 * time.Millisecond // tickTime of ensemble 1-3
	}
	return 0
}

// ttlOf returns the TTL of campaign name.
func ttlOf(name string) time.Duration {
	base, _ := SplitCampaign(name)
	switch {
	case base == "zookeeper-stock":
		return zkStockTTL
	case strings.HasSuffix(name, "-"+ModePartitions):
		return partitionTTL
	case strings.Contains(name, "zookeeper"):
		return zkTTL // a migrate campaign from or to it too
	case base == "kube":
		return kubeTTL
	}
	return chaosTTL
}

// TestChaos runs a campaign per driver (Redlock twice: nodes with AOF and
// without) against the real test servers, checks each history and reports.
// It fails on any violation, except those the redlock driver documents for
// nodes that restart without persistence. Not t.Parallel: its nemesis
// kills, pauses and restarts the shared test servers.
func TestChaos(t *testing.T) {
	if *flagRecheck != "" {
		recheck(t, *flagRecheck)
		return
	}
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	// The short campaign ends at its size; maxDur only caps one that a loaded
	// machine slows (a fault whose recovery takes seconds).
	faults, terms, maxDur := 5, 12, 75*time.Second
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
	if b, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "./candidate").CombinedOutput(); err != nil {
		t.Fatalf("build candidate: %v\n%s", err, b)
	}

	rep := Report{Seed: seed, Command: command, Violations: map[string][]Violation{}}
	var repMu sync.Mutex // the campaigns of different lanes report at once
	var campaigns []planned
	for i, name := range strings.Split(*flagCampaign, ",") {
		cfg := Config{
			Name: name, Script: script, Binary: bin, Candidates: 3, TTL: ttlOf(name),
			Bound: 3*ttlOf(name) + 3*time.Second, Seed: seed + uint64(i),
			MinFaults: faults, MinTerms: terms, MaxDuration: maxDur, Dir: out, Logf: t.Logf,
		}
		if err := configure(t, name, &cfg); err != nil {
			t.Fatal(err)
		}
		if *flagKinds != "" {
			cfg.Faults = strings.Split(*flagKinds, ",")
		}
		if cfg.Mode == ModeMigrate {
			switch {
			case *flagMigrate > 0:
				cfg.Migrations = *flagMigrate
			case *flagLong:
				cfg.Migrations = 20
			}
			// A migration takes some 20 rolls of a candidate, each a
			// hand-over and a quiet spell: give each 90 s.
			cfg.MaxDuration = max(cfg.MaxDuration, time.Duration(cfg.Migrations)*90*time.Second)
		}
		if cfg.TTL == zkStockTTL {
			// A quiet spell and a fault take one to three TTLs: 100
			// faults at a 32 s TTL take some two hours.
			cfg.MaxDuration = max(cfg.MaxDuration, time.Duration(cfg.MinFaults)*3*cfg.TTL)
		}
		if cfg.Driver == "kube" {
			cfg.MaxDuration = max(cfg.MaxDuration, time.Duration(cfg.MinFaults)*kubeFaultTime)
		}
		if cfg.Mode == ModePriority {
			// Leaders do not resign: a term ends when its leader leaves,
			// yields or meets a fault, about every 2.5 TTL (measured 23
			// terms a minute at TTL 1 s).
			cfg.MaxDuration = max(cfg.MaxDuration, time.Duration(cfg.MinTerms)*4*cfg.TTL)
		}
		if cfg.Mode == ModePartitions {
			// Each fault waits for all partitions to be owned again
			// before the next: measured 9-10 s per fault at load 10-20.
			cfg.MaxDuration = max(cfg.MaxDuration, time.Duration(cfg.MinFaults)*15*time.Second)
		}
		campaigns = append(campaigns, planned{name, cfg})
	}
	runLanes(t, campaigns, func(t *testing.T, name string, cfg Config) {
		cfg.Logf = t.Logf
		ctx, cancel := context.WithTimeout(context.Background(), cfg.MaxDuration+5*time.Minute)
		defer cancel()
		began := time.Now()
		events, err := Run(ctx, cfg)
		if err != nil {
			t.Errorf("campaign: %v", err)
		}
		r, st := checkCampaign(name, events, cfg.TTL, cfg.Bound)
		rows := Rows(name, r)
		repMu.Lock()
		defer repMu.Unlock()
		rep.Rows = append(rep.Rows, rows...)
		rep.Violations[name] = r.Violations
		var table strings.Builder
		WriteTable(&table, rows)
		t.Logf("%s: %v, %d events, %d writes accepted, %d refused\n%s", name, time.Since(began).Round(time.Second),
			len(events), r.Accepted, r.Refused, table.String())
		if ps := r.Priority; ps != nil {
			t.Logf("%s: %d yields (%d needless); a lower leader led past its yield in %d terms, median %v, worst %v; %d leadership changes for %d changes of the top priority",
				name, ps.Yields, ps.Needless, ps.Lags, ps.MedianLag.Round(time.Millisecond), ps.WorstLag.Round(time.Millisecond), ps.Changes, ps.PriorityChanges)
			if rep.Priority == nil {
				rep.Priority = map[string]PriorityStats{}
			}
			rep.Priority[name] = *ps
		}
		if st.Keys > 0 {
			t.Logf("%s: %d elections; %d graceful hand-overs timed, worst %v; %d takeovers after a kill, worst %v; %d late replicas refused",
				name, st.Keys, st.Graceful, st.WorstGraceful.Round(time.Millisecond), st.Takeovers, st.WorstTakeover.Round(time.Millisecond), st.Refused)
			rep.Keys = append(rep.Keys, CampaignKeys{Campaign: name, KeyStats: st})
		}
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
		if cfg.Mode == ModeMigrate && st.Refused < cfg.Migrations {
			t.Errorf("campaign too small: %d migrations ended with the late old-only replica refused, want at least %d", st.Refused, cfg.Migrations)
		}
	})
	// The report lists the campaigns in the order asked for.
	order := strings.Split(*flagCampaign, ",")
	slices.SortStableFunc(rep.Rows, func(a, b Row) int { return slices.Index(order, a.Campaign) - slices.Index(order, b.Campaign) })
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

// planned is a configured campaign of TestChaos.
type planned struct {
	name string
	cfg  Config
}

// runLanes runs each campaign as a subtest of t. Campaigns whose servers
// overlap (a kind of servers.sh in common: the store, the store under it,
// the store a migration leaves) run one after the other in one lane, in
// the order given, since each injects faults into its servers; lanes run
// at once, at most -chaos.lanes of them (default 1: one campaign at a
// time), the longest first. A long campaign, whose figures are quoted,
// runs alone: one lane at a time.
func runLanes(t *testing.T, campaigns []planned, run func(t *testing.T, name string, cfg Config)) {
	var lanes [][]planned
	var laneKinds []map[string]bool
	for _, c := range campaigns {
		kinds := map[string]bool{}
		for _, k := range []string{c.cfg.ServerKind, c.cfg.UnderKind, c.cfg.OldKind} {
			if k != "" {
				kinds[k] = true
			}
		}
		// Merge every lane that shares a kind with c into one.
		var merged []planned
		mergedKinds := kinds
		for i := 0; i < len(lanes); i++ {
			shared := false
			for k := range laneKinds[i] {
				shared = shared || kinds[k]
			}
			if !shared {
				continue
			}
			merged = append(merged, lanes[i]...)
			maps.Copy(mergedKinds, laneKinds[i])
			lanes, laneKinds = slices.Delete(lanes, i, i+1), slices.Delete(laneKinds, i, i+1)
			i--
		}
		lanes, laneKinds = append(lanes, append(merged, c)), append(laneKinds, mergedKinds)
	}
	slices.SortStableFunc(lanes, func(a, b []planned) int { return len(b) - len(a) })
	parallel := 1
	if !*flagLong && *flagLanes > 1 {
		parallel = *flagLanes
	}
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, lane := range lanes {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			for _, c := range lane {
				t.Run(c.name, func(t *testing.T) { run(t, c.name, c.cfg) })
			}
		})
	}
	wg.Wait()
}

// stores maps a store's name in a migrate campaign's name to its driver
// and servers.sh kind.
var stores = map[string][2]string{"redis": {"redlock", "redis"}, "etcd": {"etcd", "etcd"}, "zookeeper": {"zookeeper", "zk"}}

// addrs returns the test servers' addresses of a servers.sh kind.
func addrs(t *testing.T, kind string) []string {
	switch kind {
	case "redis":
		return testenv.RedisAddrs(t)
	case "etcd":
		return testenv.EtcdEndpoints(t)
	}
	return testenv.ZKServers(t)
}

// configure sets the driver, servers, mode and faults of campaign name:
// <base>[-restarts|-concurrent|-partitions] for base redlock-aof,
// redlock-noaof, etcd, zookeeper or kube, or migrate-<old>-<new> for stores
// redis, etcd and zookeeper.
func configure(t *testing.T, name string, cfg *Config) error {
	if rest, ok := strings.CutPrefix(name, "migrate-"); ok {
		o, n, _ := strings.Cut(rest, "-")
		old, okOld := stores[o]
		nw, okNew := stores[n]
		if !okOld || !okNew || o == n {
			return fmt.Errorf("unknown campaign %q: want migrate-<old>-<new> with two of redis, etcd, zookeeper", name)
		}
		cfg.Mode, cfg.Candidates, cfg.Migrations = ModeMigrate, 5, 1
		cfg.OldDriver, cfg.OldKind, cfg.OldAddrs = old[0], old[1], addrs(t, old[1])
		cfg.Driver, cfg.ServerKind, cfg.Addrs = nw[0], nw[1], addrs(t, nw[1])
		if nw[1] == "zk" {
			cfg.SyncWindow = zkWindow(t)
		}
		// The nemesis hits the new store's nodes and, with the old- kinds,
		// the old store's; Redis ones restart with AOF, so that the marker
		// survives.
		cfg.AOF = nw[1] == "redis"
		cfg.Faults = append(FaultKinds(cfg.ServerKind, cfg.AOF), OldFaults(cfg.OldKind)...)
		return nil
	}
	base, mode := SplitCampaign(name)
	switch base {
	case "redlock-aof", "redlock-noaof":
		cfg.Driver, cfg.ServerKind, cfg.Addrs, cfg.AOF = "redlock", "redis", testenv.RedisAddrs(t), base == "redlock-aof"
	case "etcd":
		cfg.Driver, cfg.ServerKind, cfg.Addrs = "etcd", "etcd", testenv.EtcdEndpoints(t)
	case "zookeeper":
		cfg.Driver, cfg.ServerKind, cfg.Addrs, cfg.SyncWindow = "zookeeper", "zk", testenv.ZKServers(t), zkWindow(t)
	case "kube":
		u, err := url.Parse(testenv.KubeURL(t))
		if err != nil {
			return fmt.Errorf("campaign %q: ELECTOR_KUBE_URL: %w", name, err)
		}
		if mode == ModePartitions {
			// Only the group's members write its Leases: partition
			// mode's 2 s TTL needs the driver's elector-only floor.
			q := u.Query()
			q.Set("elector_only", "true")
			u.RawQuery = q.Encode()
		}
		cfg.Driver, cfg.ServerKind, cfg.Addrs, cfg.KubeURL = "kube", "kube", []string{u.Host}, u.String()
		cfg.UnderKind, cfg.UnderAddrs = "etcd", testenv.EtcdEndpoints(t)
	case "zookeeper-stock":
		cfg.Driver, cfg.ServerKind, cfg.Addrs, cfg.SyncWindow = "zookeeper", "zk", testenv.ZKStockServers(t), zkStockWindow
		cfg.FirstNode = 5
	default:
		return fmt.Errorf("unknown campaign %q in -chaos.campaigns", name)
	}
	switch mode {
	case ModePartitions:
		cfg.Mode, cfg.Partitions, cfg.Candidates = ModePartitions, 64, 5
	case ModePriority:
		// Four candidates of priorities 1-3: most of the time two share
		// one, and one waits above or below the leader.
		cfg.Mode, cfg.Candidates = ModePriority, 4
	}
	cfg.Clock = mode == "clock"
	var err error
	if cfg.Faults, err = ModeFaults(mode, cfg.ServerKind, cfg.AOF); err != nil {
		return fmt.Errorf("campaign %q: %w", name, err)
	}
	return nil
}

// checkCampaign checks the history of campaign name: [Check], or
// [CheckKeys] for a partitions or migrate campaign (graceful hand-overs
// within TTL, takeovers after a kill within TTL + 1 s, late replicas
// refused).
func checkCampaign(name string, events []Event, ttl, bound time.Duration) (Result, KeyStats) {
	documented := func(string) bool { return false }
	if strings.HasPrefix(name, "redlock") {
		documented = DocumentedRedlock
	}
	if _, mode := SplitCampaign(name); mode == "clock" {
		documented = DocumentedClock
	}
	p := Params{Bound: bound, Documented: documented}
	switch {
	case strings.HasPrefix(name, "migrate-"):
		return CheckKeys(events, p, KeyParams{Span: true, MustRefuse: IsLate})
	case strings.HasSuffix(name, "-"+ModePartitions):
		return CheckKeys(events, p, KeyParams{
			Graceful: func(note string) bool { return note == "moved" || note == "leaving" },
			Handover: ttl, Takeover: ttl + expiryGrain(name) + time.Second,
		})
	case strings.HasSuffix(name, "-"+ModePriority):
		r := Check(events, p)
		st := CheckPriority(events, &r, priorityParams(name, ttl))
		r.Priority = &st
		return r, KeyStats{}
	}
	r := Check(events, p)
	if _, mode := SplitCampaign(name); mode == "clock" {
		FailStaleWrites(&r)
	}
	return r, KeyStats{}
}

// priorityParams returns the preference rules of priority campaign name
// at ttl: candidates lead at least one TTL (the candidates' -min-term); a
// yield is due within TTL + 1 s, the bound a yielding leader waits for the
// lower candidates to stand aside plus a second for the hand-over; a
// candidate's entry outlives its process by up to the TTL and the store's
// expiry grain.
func priorityParams(name string, ttl time.Duration) PriorityParams {
	return PriorityParams{MinTerm: ttl, Budget: ttl + time.Second, Liveness: 2*ttl + expiryGrain(name) + time.Second}
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
		r, _ := checkCampaign(name, h.Events(), ttlOf(name), 3*ttlOf(name)+3*time.Second)
		rows = append(rows, Rows(name, r)...)
		if ps := r.Priority; ps != nil {
			t.Logf("%s: %+v", name, *ps)
		}
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
		fmt.Fprintf(f, `{"mono":%d,"proc":%q,"kind":%q,"token":%d,"ok":%v,"note":%q,"key":%q}`+"\n", ev.Mono, ev.Proc, ev.Kind, ev.Token, ev.OK, ev.Note, ev.Key)
	}
	return f.Close()
}
