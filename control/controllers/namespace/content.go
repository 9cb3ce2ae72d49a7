package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
)

// finalizer is the one this controller owns.
const finalizer = string(corev1.FinalizerKubernetes)

// listPage bounds each list of a namespace's content.
const listPage = 500

// reconcile empties namespace name if it is being deleted and still carries the
// "kubernetes" finalizer, then releases it. It is idempotent.
func (c *Controller) reconcile(ctx context.Context, name string) error {
	ns, err := c.client.Resource(namespaces).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("namespace: reading namespace %s: %w", name, err)
	}
	if ns.GetDeletionTimestamp() == nil {
		return nil
	}
	spec := specFinalizers(ns)
	if !slices.Contains(spec, finalizer) && !slices.Contains(ns.GetFinalizers(), finalizer) {
		if len(spec) == 0 {
			// Released before, but not deleted again (a restart in between).
			return c.deleteNamespace(ctx, ns)
		}
		return nil // other finalizers, other owners
	}
	remaining, err := c.deleteContent(ctx, name)
	if err != nil {
		return err
	}
	if len(remaining) > 0 {
		c.logger.Info("waiting for namespace content to go", "namespace", name, "resources", remaining, "recheck_in", c.opts.RecheckPeriod)
		c.queue.AddAfter(name, c.opts.RecheckPeriod)
		return nil
	}
	return c.release(ctx, ns)
}

func specFinalizers(ns *unstructured.Unstructured) []string {
	f, _, _ := unstructured.NestedStringSlice(ns.Object, "spec", "finalizers")
	return f
}

// deleteContent deletes every object in namespace of every namespaced resource that
// can be listed and deleted, and returns the resources that still hold objects
// afterwards (objects with finalizers or grace periods take time). An error means the
// namespace must not be released yet: a list or delete failed, or some API group did
// not answer discovery, so its content is unknown.
func (c *Controller) deleteContent(ctx context.Context, namespace string) ([]string, error) {
	lists, discoveryErr := discovery.ServerPreferredNamespacedResources(c.disc)
	if discoveryErr != nil && !discovery.IsGroupDiscoveryFailedError(discoveryErr) {
		return nil, fmt.Errorf("namespace: %s: discovering namespaced resources: %w", namespace, discoveryErr)
	}
	var errs []error
	if discoveryErr != nil {
		errs = append(errs, fmt.Errorf("namespace: %s stays until discovery answers for every group: %w", namespace, discoveryErr))
	}
	var remaining []string
	for _, l := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists) {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			errs = append(errs, fmt.Errorf("namespace: discovery lists group version %q: %w", l.GroupVersion, err))
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			left, err := c.deleteAll(ctx, gvr, namespace)
			if err != nil {
				errs = append(errs, err)
			}
			if left {
				remaining = append(remaining, gvr.GroupResource().String())
			}
		}
	}
	return remaining, errors.Join(errs...)
}

// deleteAll deletes the objects of gvr in namespace that are not being deleted yet,
// with propagationPolicy Background, and reports whether any object is left.
func (c *Controller) deleteAll(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (bool, error) {
	client := c.client.Resource(gvr).Namespace(namespace)
	background := metav1.DeletePropagationBackground
	deleted := 0
	for cont := ""; ; {
		list, err := client.List(ctx, metav1.ListOptions{Limit: listPage, Continue: cont})
		if err != nil {
			return true, fmt.Errorf("namespace: %s: listing %s: %w", namespace, gvr.GroupResource(), err)
		}
		for _, item := range list.Items {
			if item.GetDeletionTimestamp() != nil {
				continue
			}
			uid := item.GetUID()
			err := client.Delete(ctx, item.GetName(), metav1.DeleteOptions{
				PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid},
			})
			switch {
			case err == nil:
				deleted++
				c.metrics.deletions.WithLabelValues(gvr.GroupResource().String()).Inc()
			case apierrors.IsNotFound(err), apierrors.IsConflict(err):
				// Gone, or replaced by a new object of that name: the next list says.
			default:
				return true, fmt.Errorf("namespace: %s: deleting %s %s: %w", namespace, gvr.GroupResource(), item.GetName(), err)
			}
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	if deleted > 0 {
		c.logger.Info("deleted namespace content", "namespace", namespace, "resource", gvr.GroupResource().String(), "objects", deleted)
	}
	left, err := client.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return true, fmt.Errorf("namespace: %s: listing %s: %w", namespace, gvr.GroupResource(), err)
	}
	return len(left.Items) > 0, nil
}

// release removes the "kubernetes" finalizer from the namespace (spec.finalizers,
// and metadata.finalizers where it may also sit) and deletes the namespace again,
// which removes it once no finalizer remains.
func (c *Controller) release(ctx context.Context, ns *unstructured.Unstructured) error {
	name, uid := ns.GetName(), ns.GetUID()
	var spec []string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.client.Resource(namespaces).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("namespace: reading namespace %s: %w", name, err)
		}
		if cur.GetUID() != uid {
			return nil
		}
		spec = withoutFinalizer(specFinalizers(cur))
		patch := map[string]any{
			"metadata": map[string]any{"resourceVersion": cur.GetResourceVersion(), "finalizers": withoutFinalizer(cur.GetFinalizers())},
			"spec":     map[string]any{"finalizers": spec},
		}
		body, err := json.Marshal(patch)
		if err != nil {
			return fmt.Errorf("namespace: patch of namespace %s: %w", name, err)
		}
		_, err = c.client.Resource(namespaces).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("namespace: removing finalizer %q from namespace %s: %w", finalizer, name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.metrics.finalized.Inc()
	c.logger.Info("namespace emptied; finalizer removed", "namespace", name)
	if len(spec) > 0 {
		return nil // other finalizers, other owners
	}
	return c.deleteNamespace(ctx, ns)
}

// withoutFinalizer returns fs without this controller's finalizer; nil when empty,
// which a merge patch writes as null, removing the field.
func withoutFinalizer(fs []string) []string {
	var out []string
	for _, f := range fs {
		if f != finalizer {
			out = append(out, f)
		}
	}
	return out
}

// deleteNamespace deletes the namespace again, on condition that it is the same
// object: with its finalizers gone, this removes it.
func (c *Controller) deleteNamespace(ctx context.Context, ns *unstructured.Unstructured) error {
	uid := ns.GetUID()
	err := c.client.Resource(namespaces).Delete(ctx, ns.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("namespace: deleting released namespace %s: %w", ns.GetName(), err)
	}
	return nil
}
