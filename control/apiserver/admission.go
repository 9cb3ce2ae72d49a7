package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plinth/plinth/control/storage"
)

// admit runs the admitters on a write. Writes made outside a request (by hooks) carry
// no attributes and are the server's own: they are not admitted again.
func (s *Server) admit(ctx context.Context, obj, old runtime.Object) error {
	a, ok := RequestAttributes(ctx)
	if !ok {
		return nil
	}
	for _, ad := range s.cfg.Admitters {
		if err := ad.Admit(ctx, a, obj, old); err != nil {
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				return err
			}
			return apierrors.NewForbidden(schema.GroupResource{Group: a.Group, Resource: a.Resource}, a.Name, err)
		}
	}
	return nil
}

// checkNamespace refuses to create objects in a namespace that does not exist or is
// being deleted, as Kubernetes' NamespaceLifecycle admission does. It applies only
// when the server serves namespaces.
func (s *Server) checkNamespace(ctx context.Context, namespace string) error {
	nsr, ok := s.cfg.Registry.Lookup(schema.GroupVersion{Version: "v1"}, "namespaces")
	if !ok {
		return nil
	}
	kv, err := s.cfg.Store.Get(ctx, nsr.key("", namespace))
	if errors.Is(err, storage.ErrNotFound) {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, namespace)
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var ns struct {
		Metadata struct {
			DeletionTimestamp *string `json:"deletionTimestamp"`
		} `json:"metadata"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	}
	if err := json.Unmarshal(kv.Value, &ns); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("namespace %s is corrupt: %w", namespace, err))
	}
	if ns.Metadata.DeletionTimestamp != nil || ns.Status.Phase == "Terminating" {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, namespace,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
	}
	return nil
}
