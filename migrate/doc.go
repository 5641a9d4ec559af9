// Package migrate moves an election from one backend to another during a
// rolling deploy, with never two leaders and tokens that keep rising: from
// Redis (redlock) to a consensus store (etcd, ZooKeeper, Kubernetes Leases)
// when correctness comes to require one, or between any two backends.
//
// A [Backend] wraps the old and the new backend and runs in a [Phase]; each
// replica's phase comes from its configuration, and the runbook rolls the
// replicas from one phase to the next one at a time:
//
//	old, _ := redlock.New(redisClients, nil)
//	nw, _ := etcd.New(etcdClient, nil)
//	b, err := migrate.New(old, nw, migrate.PhaseBoth, &migrate.Options{NewName: "etcd"})
//	e, err := elector.New(b, "send-invoices", &elector.Options{ ... })
//
// The idea comes from Kafka's ZooKeeper-to-KRaft migration (KIP-866), where
// the new controller writes a persistent record into the old store so that
// old-version nodes can no longer win. The reasoning behind the guarantees
// below is in
// https://github.com/leaderkit/elector/blob/main/docs/design/migrate.md.
//
// # Runbook
//
// The full runbook is docs/migration.md in the repository: (1) every
// replica on the old backend alone, unmodified or in [PhaseOld]; (2) roll
// every replica to [PhaseBoth], where a candidate leads only while it holds
// both backends, until [Backend.Status] shows Old and New name one holder;
// (3) roll every replica to [PhaseNew]: the first PhaseNew winner turns the
// old lease into the persistent marker ([Options.Marker]), holder
// [MarkerPrefix]+NewName, so old-only replicas cannot win; wait for Status
// Marked; (4) roll every replica to [PhaseDone], still given the old
// backend, then call [Cleanup] once to remove the marker. To roll back
// before step 3, roll back through PhaseBoth to PhaseOld; after it, going
// back is a migration of its own, with Epoch set to this one's Epoch+1.
//
// # Guarantees
//
// At every step, any two replicas that can run at once share a store on
// which both need the election, so no two terms overlap, provided each
// store keeps its own guarantee (a redlock store under its documented
// assumptions). A candidate campaigns on both stores at once and the old
// store has priority: one that holds the old lease waits for the new one as
// long as it holds it, while one whose old campaign has not won within
// 100 ms withdraws from the new side until it holds the old lease, so a
// hand-over costs the old store's plus an uncontended campaign on the new
// one. A term's Deadline is the earlier of the two leases'; Renew
// renews both; Lost closes when either is lost; Release releases both. The
// marker lasts as long as the old store keeps its data (run Redis nodes
// with appendonly yes); it stops replicas that campaign on the old store,
// not one that leads on a third store or another cluster. After [Cleanup]
// nothing stops an old-only replica: run it only when none can start again.
//
// # Fencing
//
// A term's token is epoch<<48 | native ([Token], [SplitToken]), where
// native is the token the store issued and epoch is [Options.Epoch] for the
// old store's tokens and Epoch+1 for the new store's. With the default
// Epoch 0 the tokens of step 1 equal the old store's own, so an existing
// fence keeps working, and every token of the new store is above every
// token of the old. A native token of 2^48 or more is refused with an error
// wrapping [backend.ErrInvalid]. A fence compares whole tokens (exactly as
// decimal strings, as redlock's Fence does; Lua or JSON numbers are exact
// only below 2^53, epochs below 32). A store's Guard takes SplitToken's
// native part, and only while the term's token is that store's. To migrate
// again later, set Epoch to the previous migration's Epoch+1.
//
// # Directions
//
// Any backend can be old or new; the old one needs a [Marker], which every
// driver implements in its on-store format, so that unmodified replicas and
// the store's usual clients (redsync, etcdctl, Curator, client-go) wait
// behind it. From Redis to a consensus store the guarantees grow; to Redis
// they weaken to Redlock's assumptions from step 3 on.
//
// # URLs and the elect command
//
// Importing this package registers the schemes migrate+old, migrate+both,
// migrate+new and migrate+done ([SchemePrefix]) with package backendurl:
// migrate+both://?old=<URL>&new=<URL>, each inner URL percent-encoded and
// naming a distinct, non-migrate store; [CheckURL] checks one. `elect
// migrate url` prints one, `elect status` shows the phase, the marker and
// each store's holder, and `elect migrate cleanup` is step 4.
//
// # Errors
//
// [New] refuses invalid arguments with an error wrapping
// [backend.ErrInvalid] that names the field. Campaign wraps the errors of
// the backend it was talking to, saying which; a PhaseOld replica on a
// migrated election and a PhaseDone replica before the marker get an error
// wrapping [backend.ErrInvalid] that names the runbook step, so an elector
// stops rather than retry. Context errors are returned unwrapped.
package migrate
