package kube_test

import (
	"context"
	"log"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/kube"
)

// A controller in a pod electing its leader on a Lease in its own
// namespace, with the pod's service account (its Role must allow get,
// create, update and watch on coordination.k8s.io leases). Replicas still
// running client-go's leaderelection on the same Lease wait behind it, and
// it behind them. (Not run: it needs a cluster.)
func Example() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		log.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	b, err := kube.New(cs.CoordinationV1(), "my-namespace", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	e, err := elector.New(b, "my-controller", &elector.Options{
		TTL: 15 * time.Second,
		OnElected: func(ctx context.Context, t elector.Term) {
			log.Printf("leading with token %d", t.Token)
			<-ctx.Done() // run the controller's loops until the term ends
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	_ = e.Run(ctx) // releases the Lease on SIGTERM: a waiting replica leads at once
}
