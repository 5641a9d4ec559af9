package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// checkNamespace returns an error naming the Backend's namespace when the
// apiserver says it does not exist, and nil when it exists or the
// apiserver does not tell (the client's credentials may not read
// namespaces, or the client does not expose its REST client). A read of a
// Lease in a namespace that does not exist finds no Lease, as a read of an
// election never held does; Leader and Leaders ask only then, and only
// until the namespace is seen to exist.
func (b *Backend) checkNamespace(ctx context.Context) error {
	if b.nsExists.Load() || b.rest == nil {
		return nil
	}
	_, err := bounded(b, ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.rest.Get().AbsPath("/api/v1/namespaces", b.ns).Do(ctx).Error()
	})
	switch {
	case err == nil:
		b.nsExists.Store(true)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("namespace %q does not exist (kube:// URL parameter namespace, or the context's)", b.ns)
	}
	return nil
}

// restOf returns the REST client of client, nil when it does not expose one.
func restOf(client any) rest.Interface {
	rc, ok := client.(interface{ RESTClient() rest.Interface })
	if !ok {
		return nil
	}
	if r, ok := rc.RESTClient().(*rest.RESTClient); !ok || r == nil {
		return nil
	}
	return rc.RESTClient()
}
