// Command elect runs a command on one replica at a time: the replicas
// campaign in an election kept by Redis (Redlock over several independent
// masters), etcd or ZooKeeper, and only the leader runs the command. It is
// what `consul lock` and `etcdctl lock` are for those stores, over all three,
// and it stops the command when leadership is lost — before the lease can
// expire, so that two replicas never run it at once.
//
// Usage:
//
//	elect run    [flags] -- COMMAND [ARGS...]   run COMMAND while leading
//	elect status [flags]                        print the current leader
//	elect watch  [flags]                        print each change of leader
//	elect partitions [flags]                    print who owns each partition of a group
//	elect compare --backend URL --backend URL…  measure backends side by side
//	elect migrate url|cleanup [flags]           move an election between backends
//	elect help   [run|status|watch|partitions|compare|migrate]  show help
//	elect version                               print the version and build information
//
// Every flag has an environment variable: --backend is ELECT_BACKEND,
// --metrics-addr is ELECT_METRICS_ADDR, and so on; a flag given on the
// command line wins. The backend is a URL: package
// github.com/leaderkit/elector/backendurl states the rules every scheme
// shares, and the section URLs of each driver package (redlock, etcd,
// zookeeper) lists its parameters:
//
//	redis://h1:6379,h2:6379,h3:6379   etcd://h1:2379,h2:2379   zk://h1:2181,h2:2181
//
// # elect run
//
// elect run campaigns and, while leading, runs COMMAND in a process group of
// its own with the term in its environment: ELECT_TERM_ELECTION,
// ELECT_TERM_IDENTITY, ELECT_TERM_TOKEN (the fencing token: pass it with
// every write, and have the store refuse lower tokens) and ELECT_TERM_START.
// Every other ELECT_* variable of elect's environment, any of which may
// hold credentials, is removed from it.
//
// When the term ends, each process of COMMAND's tree (see below) gets one
// SIGTERM, then SIGKILL after --grace. When elect gives the lease up (it was stopped, or COMMAND
// exited) the lease is kept renewed meanwhile and released afterwards, so
// another replica takes over at once. When the lease is lost (the backend
// says so, or no renewal succeeded in time) the term ends --safety-margin
// before the lease's deadline and the grace is cut to half of the safety
// margin: the command is dead before any other replica can be elected. What
// is left of COMMAND's tree when COMMAND exits is killed. If elect itself is
// killed, even with SIGKILL, COMMAND's tree dies with it; the lease then
// lapses after --ttl.
//
// SIGHUP, SIGUSR1, SIGUSR2 and SIGWINCH are forwarded to COMMAND's group.
// A signal elect was started with ignored (nohup ignores SIGHUP) is neither
// caught nor forwarded, and stays ignored in COMMAND.
// SIGINT and SIGTERM stop elect: the term ends as above; a second one kills
// COMMAND at once.
//
// When COMMAND exits on its own, --on-exit decides: exit (give the lease up
// and exit with COMMAND's status), restart (run it again after
// --restart-delay in the same term), or resign (give the lease up, campaign
// again, run it when re-elected). After a lost term COMMAND runs again each
// time the replica is re-elected.
//
// With --once, for cron: COMMAND runs at most once across the replicas for
// one firing. A replica that sees another leader, or is not elected within
// --wait, exits 0 without running it. The winner runs COMMAND, holds the
// lease --hold longer (at least --wait, so that a replica still waiting, or
// fired a little later, finds the election taken), releases it and exits
// with COMMAND's status.
//
// # COMMAND's processes
//
// COMMAND's tree is COMMAND and every process it starts, directly or not.
// COMMAND does not run as elect's child but under a watchdog: elect's own
// binary, started again in a hidden mode, which starts COMMAND in a process
// group of its own and stays its parent until the tree is gone. The
// watchdog passes elect's signals on and, when COMMAND exits, kills what is
// left of the tree before it reports COMMAND's status to elect: nothing
// COMMAND started runs on after its term, nor beside the next run of
// --on-exit=restart. If elect dies, even of SIGKILL, the watchdog learns it
// at once from the end of a pipe that only elect holds, and kills the whole
// tree within milliseconds, so that no copy of COMMAND runs on while
// another replica takes over one --ttl later. The watchdog runs in a
// process group of its own and survives SIGINT, SIGTERM, SIGHUP and SIGQUIT,
// so that a signal meant for elect or for its job (a shell's kill -9 %1)
// does not take it along; COMMAND starts with the signal dispositions elect
// had.
//
// On Linux the watchdog is a child subreaper (prctl PR_SET_CHILD_SUBREAPER):
// a process of the tree whose parent dies becomes the watchdog's child
// rather than init's. So the watchdog finds every process of the tree by
// following the kernel's lists of children from itself, including those
// that left COMMAND's process group or session (setsid, a daemon's double
// fork) or ignore SIGTERM, and it sends SIGKILL again each time it reaps a
// child, until it has none left: a process forked while its parent was
// being killed is caught too. COMMAND also dies if the watchdog is killed
// (PR_SET_PDEATHSIG).
//
// Why a watchdog and not a cgroup: cgroup v2's cgroup.kill kills every
// process of a cgroup at once, but elect would need a writable, delegated
// cgroup hierarchy to make one, which an unprivileged user, most containers
// and hosts still on cgroup v1 do not have; and some process must still
// write cgroup.kill after elect has died, a watchdog all the same. A
// subreaper needs no privilege and works on every Linux since 3.4. (Under
// systemd, the default KillMode=control-group also kills what is left of a
// service's cgroup once its main process has died.)
//
// What remains. A process started on COMMAND's behalf by another service
// (systemd-run, at, a container runtime) is not in the tree. If the
// watchdog itself is killed with SIGKILL, COMMAND dies but its descendants
// are left to init, and elect, which no longer knows COMMAND's status,
// kills COMMAND's process group and reports status 125. On other Unix
// systems the watchdog is no subreaper and has no /proc to search: it
// reaches COMMAND's process group only, so a process of the tree that left
// that group survives, and nothing kills COMMAND if the watchdog dies.
// Outside Unix elect does not run.
//
// # elect status and elect watch
//
// status prints the leader's identity, token and remaining lease; watch
// prints the leader, then each change, until interrupted. Both print text,
// or one JSON object per line with --json:
//
//	{"time":"…","election":"jobs","leader":true,"identity":"web-1","token":42,"ttl_seconds":12.5}
//	{"time":"…","election":"jobs","leader":false,"unknown":true,"error":"…"}
//
// ttl_seconds appears when the backend tells the time the lease has left.
// The second form is watch's while it cannot read the backend; the leader
// is printed again once it can.
//
// # elect partitions
//
// partitions prints who owns what in a group of partitions shared with
// package github.com/leaderkit/elector/partition (--group and --partitions
// as the members pass them to partition.New): each member with its weight
// and load, then each partition with its owner, fencing token and the
// member placement gives it. It exits 1 when some partition has no owner.
//
// # elect compare
//
// compare runs the same workloads through the same API on every --backend
// given (acquire+release, throughput, graceful hand-over, renewal of many
// held elections, crash failover, a partition group's rebalance, the
// shortest TTL granted) and prints a table, --json, --markdown, or an HTML
// page with latency CDFs (--html FILE). It works in elections of its own
// under a random name and removes them before it exits, also when
// interrupted (exit 130), the Leases of a kube:// backend included. On a
// kube:// backend, whose client limits its request rate (the URL's qps),
// renewal holds only as many elections as half that rate renews every
// TTL/3, and the table says how many. Package github.com/leaderkit/elector/compare
// is the same as a Go API.
//
// # elect migrate
//
// migrate url prints the migrate+PHASE:// backend URL that moves an
// election from an old backend to a new one during a rolling deploy
// (package github.com/leaderkit/elector/migrate; the runbook is
// docs/migration.md in the repository); migrate cleanup is the runbook's
// last step. elect status with such a URL shows the phase, the marker and
// the holder on each store.
//
// # elect version
//
// version (also --version) prints the module version, the VCS revision and
// its time, whether the tree was modified, and the Go version, from the
// build information the Go toolchain embeds.
//
// # Metrics
//
// With --metrics-addr, elect run serves Prometheus metrics on /metrics (see
// package github.com/leaderkit/elector/promelector: is_leader, terms,
// revocations by reason, campaign, renew and release latency) and /healthz,
// which answers 200 "ok", or 503 when the elector is stuck (see
// elector.Elector.Check).
//
// # Exit codes
//
//	0    success; with --once, also when another replica ran (or runs) the command;
//	     elect run stopped by SIGINT or SIGTERM (with --once, once COMMAND
//	     has run: COMMAND's status)
//	1    no leader: status finds none, partitions an unowned partition;
//	     --once: not elected within --wait while no replica leads
//	2    what the user must change: bad flags, environment variables or
//	     backend URL, a TTL the backend refuses, credentials or permissions
//	     the server refuses at the first request
//	3    the backend cannot be reached, or did not answer within --timeout
//	     (or --wait)
//	4    --once: leadership was lost while COMMAND ran; it was stopped
//	125  elect itself failed
//	126  COMMAND could not be started; 127 COMMAND was not found
//	any other  COMMAND's own exit status (128+N when signal N killed it)
package main
