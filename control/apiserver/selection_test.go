package apiserver

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSelectionPrefixNarrowsToANamedObject(t *testing.T) {
	nodes := &Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "nodes", Kind: "Node",
		New: func() runtime.Object { return &corev1.Node{} }}
	leases := &Resource{GroupVersion: schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}, Plural: "leases", Kind: "Lease",
		Namespaced: true, New: func() runtime.Object { return &coordinationv1.Lease{} }}
	sel := func(field string) selector {
		return selector{labels: labels.Everything(), fields: fields.ParseSelectorOrDie(field)}
	}
	for _, tc := range []struct {
		r         *Resource
		namespace string
		sel       selector
		want      string
	}{
		{nodes, "", sel("metadata.name=n1"), nodes.key("", "n1")},
		{nodes, "", sel("metadata.name==n1,spec.unschedulable=true"), nodes.key("", "n1")},
		{nodes, "", sel(""), nodes.listPrefix("")},
		{nodes, "", sel("metadata.name!=n1"), nodes.listPrefix("")},
		{nodes, "", sel("metadata.name=.."), nodes.listPrefix("")},
		{leases, "kube-node-lease", sel("metadata.name=n1"), leases.key("kube-node-lease", "n1")},
		// Across namespaces the name alone is no key.
		{leases, "", sel("metadata.name=n1"), leases.listPrefix("")},
		{nodes, "", selector{labels: labels.Everything()}, nodes.listPrefix("")},
	} {
		if got := selectionPrefix(tc.r, tc.namespace, tc.sel); got != tc.want {
			t.Errorf("%s in %q with %v: prefix %q, want %q", tc.r.Plural, tc.namespace, tc.sel.fields, got, tc.want)
		}
	}
}
