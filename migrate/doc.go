// Package migrate moves an election from one backend to another during a
// rolling deploy, with never two leaders and tokens that keep rising: from
// Redis (redlock) to etcd or ZooKeeper when correctness comes to require a
// consensus store, or between any two backends.
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
// The idea comes from Kafka's ZooKeeper-to-KRaft migration (KIP-866,
// https://cwiki.apache.org/confluence/display/KAFKA/KIP-866+ZooKeeper+to+KRaft+Migration),
// where the new controller writes a persistent record into the old store so
// that old-version nodes can no longer win, and from client-go's MultiLock
// (kubernetes/client-go tools/leaderelection/resourcelock/multilock.go),
// which held an old and a new lock at once but had no fencing and needed the
// old lock to exist.
//
// # Runbook
//
//  1. All replicas run on the old backend alone: unmodified, or through this
//     package in [PhaseOld], which behaves the same but is refused once the
//     migration has passed step 3.
//  2. Roll every replica to [PhaseBoth]. A candidate campaigns on both
//     backends at once; it leads only while it holds both, and losing either ends its term. Old
//     replicas still running step 1 are excluded by the old lease. Watch
//     [Backend.Status]: Old and New name the same holder.
//  3. Roll every replica to [PhaseNew]. Replicas still in PhaseBoth need the
//     new lease too, so exclusion holds. The first PhaseNew candidate to win
//     takes the old lease as PhaseBoth does, then turns it into the
//     persistent "migrated" marker with [Options.Marker] before its term
//     starts; from then on the old store reports the holder
//     [MarkerPrefix]+NewName for good. An old-only replica then cannot win:
//     an unmodified one waits behind the marker forever, a PhaseOld one is
//     refused with an error wrapping [backend.ErrInvalid] that names the
//     runbook step. PhaseBoth replicas see the marker and campaign on the
//     new backend alone. Watch Status until Marked is true before step 4.
//  4. Roll every replica to [PhaseDone], still given the old backend: a
//     PhaseDone replica refuses to start while a candidate, not the
//     marker, holds the old store (a replica still leads there, so step 3
//     is not done). Then call [Cleanup] once to remove the marker from the
//     old store. Cleanup removes the marker and nothing else (a fencing
//     counter the old store keeps stays, so its tokens never go back), and
//     refuses when the old store's holder is a candidate. Replicas keep
//     running, and restarting, in PhaseDone with the old backend after
//     Cleanup; later deploys may configure PhaseDone without one.
//
// To roll back before step 3, roll the replicas back through PhaseBoth to
// PhaseOld: the old lease still orders every term. Once the marker is
// written, the fence has seen tokens of the new epoch, so going back is a
// migration of its own in the other direction, with Epoch set to this one's
// Epoch+1 and a Marker for the new store.
//
// # Guarantees
//
// At every moment of the runbook, any two replicas that can run at once
// share a store on which both need the election: steps 1 and 2 share the
// old store, steps 2 and 3 the new one, steps 3 and 4 the new one, and a
// replica of step 1 that starts after step 3 meets the marker, which holds
// the old store's election for good. So no two terms overlap, provided each
// store keeps its own guarantee (a redlock store under its documented
// assumptions). A candidate campaigns on both stores at once, so that an
// uncontended campaign costs about the slower store's; the old store has
// priority: a candidate that holds the old lease waits for the new one as
// long as it holds it (renewing it meanwhile, and releasing it if the new
// campaign fails or its ctx ends), while one whose old campaign has not won
// within 100 ms withdraws from the new side (giving back the new lease if it
// won it) and campaigns there again only once it holds the old one. So two
// candidates never each hold one store while waiting for the other for
// longer than that, and a hand-over costs the old store's hand-over plus
// an uncontended campaign on the new store. A term's
// Deadline is the earlier of the two leases' deadlines, Renew renews both,
// Lost closes when either is lost and Release releases both.
//
// The marker lasts as long as the old store keeps its data: a Redis node
// that restarts empty loses it (run the nodes with appendonly yes). The
// marker stops replicas that campaign on the old store; it cannot stop a
// replica that leads on some third store, or one whose old backend points at
// another cluster. After [Cleanup] nothing stops an old-only replica: run it
// only when none can start again.
//
// A PhaseOld replica notices a marker written while it waits through the
// old backend's [backend.Watcher] (every driver of this module has one); a
// PhaseBoth replica does likewise and turns to the new backend. Without a
// Watcher they read the marker once per campaign only.
//
// # Fencing
//
// Tokens rise across the migration as one fence sees them. A term's token
// is
//
//	token = epoch<<48 | native
//
// where native is the token the store issued (a Redlock counter value, an
// etcd create revision, a ZooKeeper czxid) and epoch is [Options.Epoch] for
// tokens the old store issued and Epoch+1 for the new store's ([Token],
// [SplitToken]). With the default Epoch 0, the tokens of step 1 equal the old
// store's own, so a fence that served unmodified replicas keeps working. A
// PhaseBoth term carries the old store's token while the old store is
// unmarked (the old lease orders every term of steps 1 and 2), and every
// term after the marker carries the new store's: the marker is written by a
// candidate that holds the old lease, so every term with an old token ended
// before it, and every term with a new token started after it. Since every
// native token is below 2^48, every token of epoch e+1 is above every token
// of epoch e. A native token of 2^48 or more is refused (Campaign releases
// what it won and returns an error wrapping [backend.ErrInvalid]); for
// ZooKeeper that happens once the ensemble's own epoch, the high 32 bits of a
// zxid, reaches 2^16.
//
// A fence compares whole tokens: it refuses a write whose token is lower
// than the highest it has accepted (redlock's fence does so exactly, as
// decimal strings; a fence comparing Lua or JSON numbers is exact only up to
// 2^53, that is epochs below 32). A store's own Guard (an etcd Txn
// comparison, a ZooKeeper check op) works on the native part of the tokens
// that store issued: pass SplitToken's native to etcd's or zookeeper's
// Guard while the epoch is that store's. In PhaseBoth before the marker the
// term's token is the old store's, so a Guard of the new store cannot be
// used then.
//
// To migrate again later, set Epoch to the previous migration's Epoch+1, so
// the new tokens rise above those the fence has seen.
//
// # Directions
//
// Any backend can be old or new; the old store needs a [Marker], which
// every driver of this module implements on its Backend (redlock.Backend,
// etcd.Backend, zookeeper.Backend; see their Mark methods), so the old
// backend is the Marker by default. Each writes in the driver's documented
// on-store format (a lock key without expiry, a candidate key without a
// lease, a persistent candidate znode that sorts first), so that unmodified
// replicas, and redsync, concurrency.Election or Curator clients of the same
// election, wait behind it.
//
//   - Redis → etcd, Redis → ZooKeeper: the guarantees grow. During steps 2
//     and 3 a term needs the consensus store too; after step 3 they are the
//     new store's alone. Until [Cleanup], the marker is only as durable as
//     the Redis nodes' data.
//   - etcd → ZooKeeper, ZooKeeper → etcd: the guarantees stay those of a
//     consensus store throughout; both markers are durable.
//   - etcd → Redis, ZooKeeper → Redis: the guarantees weaken. From step 3
//     on, exclusion and the rise of tokens rest on Redlock's assumptions
//     (nodes keep their data, bounded clock drift; see the redlock package)
//     instead of consensus. Do it only to leave a consensus store you cannot
//     keep, and migrate the fence's resources knowing that.
//
// # URLs and the elect command
//
// Importing this package registers the URL schemes migrate+old,
// migrate+both, migrate+new and migrate+done with package backendurl (see
// [SchemePrefix]): migrate+both://?old=<URL>&new=<URL>, each inner URL
// percent-encoded. The elect command takes such a URL as --backend for
// every step; `elect migrate url` checks and prints one, `elect status`
// shows the phase, the marker, the holder on each store and the leader in
// every phase, and `elect migrate cleanup` is step 4. [CheckURL] checks
// such a URL without opening it. Old and new may not name the same store,
// nor be migrate URLs themselves.
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
