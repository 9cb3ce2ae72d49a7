package apiserver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The kinds client-go's metadata client asks for with as=...;g=meta.k8s.io;v=v1.
var (
	partialObjectMetadataGVK     = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")
	partialObjectMetadataListGVK = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList")
)

// asPartialObjectMetadata is obj's metadata alone, as meta.k8s.io/v1
// PartialObjectMetadata. The result shares obj's maps and slices, so neither may be
// changed: obj may be a cached object other requests read.
func asPartialObjectMetadata(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	var m *metav1.PartialObjectMetadata
	if oma, ok := obj.(metav1.ObjectMetaAccessor); ok {
		// Typed objects hand out their ObjectMeta itself, copied here in one go.
		m = meta.AsPartialObjectMetadata(oma.GetObjectMeta())
	} else {
		acc, err := meta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("metadata of a %T: %w", obj, err)
		}
		m = meta.AsPartialObjectMetadata(acc)
	}
	m.GetObjectKind().SetGroupVersionKind(partialObjectMetadataGVK)
	return m, nil
}

// partialObjectMetadataList is the metadata of objects as a PartialObjectMetadataList
// under lm, each item with its apiVersion and kind, as kube-apiserver writes it.
func partialObjectMetadataList(lm metav1.ListMeta, objects []runtime.Object) (*metav1.PartialObjectMetadataList, error) {
	list := &metav1.PartialObjectMetadataList{ListMeta: lm, Items: make([]metav1.PartialObjectMetadata, 0, len(objects))}
	for _, obj := range objects {
		m, err := asPartialObjectMetadata(obj)
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, *m)
	}
	list.GetObjectKind().SetGroupVersionKind(partialObjectMetadataListGVK)
	return list, nil
}
