package kube

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
	coordinationv1beta1client "k8s.io/client-go/kubernetes/typed/coordination/v1beta1"
	"k8s.io/client-go/rest"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/orphans"
)

// The registry of candidates ([backend.Registry]) is one LeaseCandidate
// object (coordination.k8s.io/v1beta1, KEP-4355) per entry, in the
// Backend's namespace, labelled with the election and annotated with the
// entry.
const (
	// ElectionLabel labels the LeaseCandidate objects of an election's
	// candidates: its Lease name ([LeaseName]), or, past the 63 characters
	// of a label value, a prefix of it, '-' and 16 hex digits of its
	// SHA-256. spec.leaseName holds the whole Lease name.
	ElectionLabel = "elector.leaderkit.dev/election"
	// CandidateAnnotation holds a candidate's identity, priority and aside
	// flag, as [backend.EncodeEntry] writes them.
	CandidateAnnotation = "elector.leaderkit.dev/candidate"
	// TTLAnnotation holds a candidate's TTL, as [time.Duration.String]
	// writes it: the entry is live until that long after its last write.
	TTLAnnotation = "elector.leaderkit.dev/ttl"
	// CandidateStrategy is the spec.strategy of the driver's
	// LeaseCandidate objects. Kubernetes' Coordinated Leader Election
	// elects only candidates of its own strategy that carry an
	// emulationVersion; the driver's carry none, and binaryVersion 0.0.0,
	// so they never outrank a client-go candidate's strategy.
	CandidateStrategy = "elector.leaderkit.dev/priority"
)

// candidatesAPI is the API group and version of LeaseCandidate objects,
// and candidatesPath its path on the apiserver.
var (
	candidatesAPI  = schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1beta1"}
	candidatesPath = "/apis/" + candidatesAPI.String()
)

// candidateClient returns a LeaseCandidate client of namespace that shares
// the REST client r's server, credentials, connections and rate limiter;
// nil when r is nil.
func candidateClient(r rest.Interface, namespace, apiPath string) coordinationv1beta1client.LeaseCandidateInterface {
	rc, ok := r.(*rest.RESTClient)
	if !ok || rc == nil {
		return nil
	}
	base := rc.Get().AbsPath("/").URL()
	base.RawQuery = ""
	cc, err := rest.NewRESTClient(base, apiPath, rest.ClientContentConfig{
		ContentType:  "application/json",
		GroupVersion: candidatesAPI,
		Negotiator:   runtime.NewClientNegotiator(rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion(), candidatesAPI),
	}, rc.GetRateLimiter(), rc.Client)
	if err != nil {
		return nil
	}
	return coordinationv1beta1client.New(cc).LeaseCandidates(namespace)
}

// candidateName returns the name of the LeaseCandidate of entry id of the
// election stored in the Lease leaseName: the Lease name, cut to leave room
// within a DNS subdomain's 253 characters, '-' and the ID.
func candidateName(leaseName, id string) string {
	room := validation.DNS1123SubdomainMaxLength - 1 - len(id)
	if len(leaseName) > room {
		leaseName = strings.TrimRight(leaseName[:room], "-.")
	}
	return leaseName + "-" + id
}

// electionLabel returns the value of [ElectionLabel] for the Lease
// leaseName.
func electionLabel(leaseName string) string {
	if len(leaseName) <= validation.LabelValueMaxLength {
		return leaseName
	}
	sum := sha256.Sum256([]byte(leaseName))
	cut := strings.TrimRight(leaseName[:validation.LabelValueMaxLength-1-hashLen], "-.")
	return cut + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// selector lists the LeaseCandidates labelled for the Lease leaseName.
func selector(leaseName string) metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: ElectionLabel + "=" + electionLabel(leaseName)}
}

// errNoCandidates is the error of a Backend whose client gives no way to reach
// LeaseCandidates.
var errNoCandidates = fmt.Errorf("%w: the client does not expose its REST client (RESTClient() *rest.RESTClient), through which the driver reaches LeaseCandidate objects", backend.ErrInvalid)

// candidateErr maps an error of a LeaseCandidate request: a 404 on the
// collection means the apiserver does not serve the API (or the namespace
// does not exist); an invalid object is refused for good.
func (b *Backend) candidateErr(ctx context.Context, err error) error {
	if !apierrors.IsNotFound(err) {
		return permanent(err)
	}
	if nsErr := b.checkNamespace(ctx); nsErr != nil {
		return nsErr
	}
	return fmt.Errorf("%w: the apiserver does not serve LeaseCandidate objects of %s (it needs --runtime-config=%s=true and --feature-gates=CoordinatedLeaderElection=true): %w",
		backend.ErrInvalid, candidatesAPI, candidatesAPI, err)
}

// Register implements [backend.Registry]: it creates a LeaseCandidate
// named after the election's Lease and the entry's ID (see
// [ElectionLabel], [CandidateAnnotation], [TTLAnnotation]). The entry is
// live while its last write is less than c.TTL old, judged on the
// apiserver's clock (see Entries). [backend.Registration.Refresh] moves
// spec.renewTime; Withdraw and Close delete the object. On an apiserver
// that does not serve coordination.k8s.io/v1beta1 LeaseCandidates, it
// fails with an error wrapping [backend.ErrInvalid] that names the API and
// the feature gate. A Register that fails without the apiserver's refusal
// deletes what it may have created; when that delete fails too, the next
// Register of the same election and identity deletes it first, and Close
// does if none comes.
func (b *Backend) Register(ctx context.Context, c backend.Candidate, aside bool) (backend.Registration, error) {
	name, err := b.open("register", c.Election)
	if err != nil {
		return nil, err
	}
	if err := backend.ValidateIdentity(c.Identity); err != nil {
		return nil, fmt.Errorf("kube: register %q: %w", c.Election, err)
	}
	if c.TTL < backend.MinTTL {
		return nil, fmt.Errorf("kube: register %q: %w: Candidate.TTL is %v; want at least %v", c.Election, backend.ErrInvalid, c.TTL, backend.MinTTL)
	}
	if b.cands == nil {
		return nil, fmt.Errorf("kube: register %q: %w", c.Election, errNoCandidates)
	}
	b.deleteOrphan(ctx, c)
	var id [8]byte
	_, _ = rand.Read(id[:])
	r := &registration{b: b, c: c, name: candidateName(name, hex.EncodeToString(id[:])), aside: aside}
	now := metav1.NewMicroTime(time.Now())
	obj := &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{
			Name:        r.name,
			Labels:      map[string]string{ElectionLabel: electionLabel(name)},
			Annotations: map[string]string{CandidateAnnotation: r.encode(aside), TTLAnnotation: c.TTL.String()},
		},
		Spec: coordinationv1beta1.LeaseCandidateSpec{
			LeaseName:     name,
			RenewTime:     &now,
			BinaryVersion: "0.0.0",
			Strategy:      CandidateStrategy,
		},
	}
	_, err = bounded(b, ctx, func(ctx context.Context) (*coordinationv1beta1.LeaseCandidate, error) {
		return b.cands.Create(ctx, obj, metav1.CreateOptions{})
	})
	if err != nil && mayHaveCreated(err) {
		// Only the reply may be lost: delete what may have been created,
		// so no reader sees a candidate that is not registered. The
		// delete is bounded by RequestTimeout, as every request is. One
		// that fails is tried again by deleteOrphan or Close: a
		// LeaseCandidate lapses after its TTL but stays until deleted, so
		// the orphan is kept until then.
		if err := r.delete(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, backend.ErrLost) {
			b.orphans.Put(orphans.Key{Election: c.Election, Identity: c.Identity}, r, time.Time{})
		}
	}
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("kube: register %q: %w", c.Election, b.candidateErr(ctx, err))
	}
	b.mu.Lock()
	closed := b.closed
	if !closed {
		if b.regs == nil {
			b.regs = make(map[*registration]struct{})
		}
		b.regs[r] = struct{}{}
	}
	b.mu.Unlock()
	if closed {
		r.withdraw()
		return nil, fmt.Errorf("kube: register %q: %w", c.Election, backend.ErrClosed)
	}
	return r, nil
}

// Entries implements [backend.Registry]: one List of the election's
// LeaseCandidates by [ElectionLabel]. An entry is live unless the
// apiserver's clock says its last write (its managedFields time) is older
// than its TTL plus two seconds of rounding and skew at the time of the
// List, as Leader judges a holder (see the package documentation, #
// Readers); without managedFields, or without a sample of the apiserver's
// clock, every entry listed is live.
func (b *Backend) Entries(ctx context.Context, election string) ([]backend.Entry, error) {
	name, err := b.open("entries", election)
	if err != nil {
		return nil, err
	}
	if b.cands == nil {
		return nil, fmt.Errorf("kube: entries %q: %w", election, errNoCandidates)
	}
	sent := time.Now()
	list, err := bounded(b, ctx, func(ctx context.Context) (*coordinationv1beta1.LeaseCandidateList, error) {
		return b.cands.List(ctx, selector(name))
	})
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("kube: entries %q: %w", election, b.candidateErr(ctx, err))
	}
	s, judged := b.sample(ctx)
	out := []backend.Entry{}
	for i := range list.Items {
		c, ok := parseCandidate(&list.Items[i], name)
		if !ok {
			continue
		}
		if exp, ok := c.judge(s, judged, b.cfg.drift); ok && !sent.Before(exp) {
			continue
		}
		out = append(out, c.entry)
	}
	return out, nil
}

// candidate is one LeaseCandidate of the driver, parsed.
type candidate struct {
	entry backend.Entry
	ttl   time.Duration
	obj   *coordinationv1beta1.LeaseCandidate
	// record is what its writer changes: a new value restarts its TTL.
	// (Coordinated Leader Election's pings change only spec.pingTime.)
	record string
}

// parseCandidate parses a LeaseCandidate of the Lease leaseName written by
// the driver; false for any other object.
func parseCandidate(obj *coordinationv1beta1.LeaseCandidate, leaseName string) (candidate, bool) {
	if obj.Spec.LeaseName != leaseName || obj.DeletionTimestamp != nil {
		return candidate{}, false
	}
	e, err := backend.DecodeEntry(obj.Annotations[CandidateAnnotation])
	if err != nil {
		return candidate{}, false
	}
	ttl, err := time.ParseDuration(obj.Annotations[TTLAnnotation])
	if err != nil || ttl <= 0 {
		return candidate{}, false
	}
	e.ID = obj.Name
	rec := obj.Annotations[CandidateAnnotation]
	if t := obj.Spec.RenewTime; t != nil {
		rec += " " + t.UTC().Format(time.RFC3339Nano)
	}
	return candidate{entry: e, ttl: ttl, obj: obj, record: rec}, true
}

// judge returns when the entry lapses on the apiserver's clock, as sampled
// in s (judged: there is a sample); false when it cannot be judged.
func (c candidate) judge(s clockSample, judged bool, drift float64) (time.Time, bool) {
	if !judged {
		return time.Time{}, false
	}
	w, ok := lastStampBut(&c.obj.ObjectMeta, pingOnly)
	if !ok {
		return time.Time{}, false
	}
	return s.expiryAt(w, c.ttl, drift), true
}

// pingOnly reports whether a managedFields entry of a LeaseCandidate owns
// nothing but spec.pingTime: the apiserver's Coordinated Leader Election
// controller pinging a candidate whose renewTime is older than its
// election duration (5 s), which it does to the entries of a crashed
// process too. Its stamp says nothing of the entry's writer.
func pingOnly(f metav1.ManagedFieldsEntry) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(f.FieldsV1.GetRawBytes(), &top) != nil || len(top) != 1 {
		return false
	}
	var spec map[string]json.RawMessage
	if json.Unmarshal(top["f:spec"], &spec) != nil || len(spec) != 1 {
		return false
	}
	_, ok := spec["f:pingTime"]
	return ok
}

// registration implements [backend.Registration] on one LeaseCandidate.
type registration struct {
	b    *Backend
	c    backend.Candidate
	name string // of the LeaseCandidate, and the entry's ID

	mu        sync.Mutex
	aside     bool
	withdrawn bool
}

func (r *registration) ID() string { return r.name }

func (r *registration) encode(aside bool) string {
	return backend.EncodeEntry(backend.Entry{Identity: r.c.Identity, Priority: r.c.Priority, Aside: aside})
}

// patch merges the entry's aside flag and a new spec.renewTime into its
// LeaseCandidate; a LeaseCandidate that is gone is an error wrapping
// [backend.ErrLost].
func (r *registration) patch(ctx context.Context, op string, aside bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.withdrawn {
		return fmt.Errorf("kube: %s entry %s of %q: withdrawn: %w", op, r.name, r.c.Election, backend.ErrLost)
	}
	body, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{CandidateAnnotation: r.encode(aside)}},
		"spec":     map[string]any{"renewTime": metav1.NewMicroTime(time.Now())},
	})
	b := r.b
	_, err := bounded(b, ctx, func(ctx context.Context) (*coordinationv1beta1.LeaseCandidate, error) {
		return b.cands.Patch(ctx, r.name, types.MergePatchType, body, metav1.PatchOptions{})
	})
	switch {
	case err == nil:
		r.aside = aside
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case apierrors.IsNotFound(err):
		return fmt.Errorf("kube: %s entry %s of %q: the LeaseCandidate was deleted: %w", op, r.name, r.c.Election, backend.ErrLost)
	}
	return fmt.Errorf("kube: %s entry %s of %q: %w", op, r.name, r.c.Election, permanent(err))
}

func (r *registration) SetAside(ctx context.Context, aside bool) error {
	return r.patch(ctx, "set aside", aside)
}

func (r *registration) Refresh(ctx context.Context) error {
	r.mu.Lock()
	aside := r.aside
	r.mu.Unlock()
	return r.patch(ctx, "refresh", aside)
}

func (r *registration) Withdraw(ctx context.Context) error {
	b := r.b
	b.mu.Lock()
	delete(b.regs, r)
	b.mu.Unlock()
	return r.delete(ctx)
}

// delete deletes the LeaseCandidate; the registration writes nothing after
// it.
func (r *registration) delete(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.withdrawn = true
	b := r.b
	_, err := bounded(b, ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.cands.Delete(ctx, r.name, metav1.DeleteOptions{})
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case apierrors.IsNotFound(err):
		return fmt.Errorf("kube: withdraw entry %s of %q: already gone: %w", r.name, r.c.Election, backend.ErrLost)
	}
	return fmt.Errorf("kube: withdraw entry %s of %q (it lapses after its TTL): %w", r.name, r.c.Election, err)
}

// mayHaveCreated reports whether a create that failed with err may still
// have created the object: the apiserver did not answer, or answered that
// it was still at work (a timeout or an internal error), rather than
// refusing it.
func mayHaveCreated(err error) bool {
	var limited *LimitError
	if errors.As(err, &limited) {
		return false // never sent
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsInternalError(err)
}

// withdraw deletes the LeaseCandidate, bounded by Options.CleanupTimeout.
func (r *registration) withdraw() {
	ctx, cancel := context.WithTimeout(context.Background(), r.b.cfg.cleanup)
	defer cancel()
	_ = r.delete(ctx)
}

// withdrawAllLocked withdraws every registration and orphan in the
// background, for Close; b.mu is held.
func (b *Backend) withdrawAllLocked() {
	for r := range b.regs {
		b.bg.Go(r.withdraw)
	}
	b.regs = nil
	for _, r := range b.orphans.Close() {
		b.bg.Go(r.withdraw)
	}
}

// deleteOrphan deletes the LeaseCandidate a failed Register of c's
// candidate left, if any, bounded by RequestTimeout; it keeps the orphan
// when the delete fails.
func (b *Backend) deleteOrphan(ctx context.Context, c backend.Candidate) {
	b.orphans.Clean(orphans.Key{Election: c.Election, Identity: c.Identity}, func(r *registration) bool {
		err := r.delete(ctx)
		return err == nil || errors.Is(err, backend.ErrLost)
	})
}

var _ backend.Registry = (*Backend)(nil)

// errNotWatching is returned by WatchEntries when the watch ends in an
// error event.
var errNotWatching = errors.New("the watch of LeaseCandidates ended")
