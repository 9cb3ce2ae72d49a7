package apiserver

import (
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// nameColumn is the first column of every table.
var nameColumn = metav1.TableColumnDefinition{
	Name: "Name", Type: "string", Format: "name",
	Description: "Name must be unique within a namespace. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
}

// AgeColumn is the AGE column most kinds end with.
var AgeColumn = metav1.TableColumnDefinition{
	Name: "Age", Type: "string",
	Description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
}

// Age formats the time since t the way kubectl prints AGE.
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// buildTable turns objects into a Table. includeObject is the request's includeObject
// parameter: None, Object, or Metadata (the default).
func buildTable(r *Resource, objs []runtime.Object, now time.Time, includeObject string, listMeta metav1.ListMeta) (*metav1.Table, error) {
	t := &metav1.Table{
		TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ListMeta: listMeta,
	}
	// The name comes first, unless the resource places it itself (events list it last).
	namesItself := false
	for _, c := range r.Columns {
		namesItself = namesItself || c.Format == "name"
	}
	switch {
	case r.Row == nil:
		t.ColumnDefinitions = []metav1.TableColumnDefinition{nameColumn, AgeColumn}
	case namesItself:
		t.ColumnDefinitions = append([]metav1.TableColumnDefinition(nil), r.Columns...)
	default:
		t.ColumnDefinitions = append([]metav1.TableColumnDefinition{nameColumn}, r.Columns...)
	}
	t.Rows = make([]metav1.TableRow, 0, len(objs))
	for _, obj := range objs {
		acc, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		var cells []any
		switch {
		case r.Row == nil:
			cells = []any{acc.GetName(), Age(acc.GetCreationTimestamp(), now)}
		case namesItself:
			cells = r.Row(obj, now)
		default:
			cells = append([]any{acc.GetName()}, r.Row(obj, now)...)
		}
		row := metav1.TableRow{Cells: cells}
		switch includeObject {
		case "None":
		case "Object":
			stampKind(obj, r.GroupVersionKind())
			raw, err := json.Marshal(obj)
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: raw}
		default:
			pom := &metav1.PartialObjectMetadata{
				TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			}
			if om, ok := obj.(metav1.ObjectMetaAccessor); ok {
				pom.ObjectMeta = *om.GetObjectMeta().(*metav1.ObjectMeta)
			}
			raw, err := json.Marshal(pom)
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: raw}
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}
