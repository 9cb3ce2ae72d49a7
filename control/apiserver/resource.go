package apiserver

import (
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Resource describes one kind of object the server stores. Only GroupVersion, Plural,
// Kind and New are required; every hook is optional.
type Resource struct {
	GroupVersion schema.GroupVersion
	Plural       string // "nodes"
	Singular     string // "node"; defaults to lower-case Kind
	Kind         string // "Node"
	Namespaced   bool
	ShortNames   []string
	Categories   []string
	// HasStatus adds the status subresource: updates of the main resource keep the
	// stored status, and updates of status keep everything else.
	HasStatus bool
	// AllowCreateOnUpdate lets PUT create a missing object.
	AllowCreateOnUpdate bool

	// New returns an empty typed object, for example &corev1.Node{}.
	New func() runtime.Object

	// Default fills defaults into a new object before validation.
	Default func(obj runtime.Object)
	// Validate checks a new object; metadata is validated generically.
	Validate func(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks an updated object against the stored one, for example
	// immutable fields.
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// SelectableFields returns the fields a field selector can match, beyond
	// metadata.name and metadata.namespace.
	SelectableFields func(obj runtime.Object) fields.Set

	// Columns and Row make the Table output kubectl prints.
	Columns []metav1.TableColumnDefinition
	Row     func(obj runtime.Object, now time.Time) []any

	Hooks
}

// GroupVersionKind of the resource's objects.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion.WithKind(r.Kind)
}

// storagePrefix is the etcd key prefix for the resource, for example
// "/core/nodes/" or "/coordination.k8s.io/leases/".
func (r *Resource) storagePrefix() string {
	g := r.GroupVersion.Group
	if g == "" {
		g = "core"
	}
	return "/" + g + "/" + r.Plural + "/"
}

func (r *Resource) key(namespace, name string) string {
	if r.Namespaced {
		return r.storagePrefix() + namespace + "/" + name
	}
	return r.storagePrefix() + name
}

func (r *Resource) listPrefix(namespace string) string {
	if r.Namespaced && namespace != "" {
		return r.storagePrefix() + namespace + "/"
	}
	return r.storagePrefix()
}

// Registry holds the served resources, by group version and plural.
type Registry struct {
	byGV map[schema.GroupVersion]map[string]*Resource
}

// NewRegistry checks the resources and indexes them.
func NewRegistry(resources ...*Resource) (*Registry, error) {
	reg := &Registry{byGV: map[schema.GroupVersion]map[string]*Resource{}}
	for _, r := range resources {
		if r.Plural == "" || r.Kind == "" || r.New == nil || r.GroupVersion.Version == "" {
			return nil, fmt.Errorf("resource %+v: Plural, Kind, New and GroupVersion.Version are required", r.GroupVersion.WithResource(r.Plural))
		}
		if r.Singular == "" {
			r.Singular = lower(r.Kind)
		}
		m := reg.byGV[r.GroupVersion]
		if m == nil {
			m = map[string]*Resource{}
			reg.byGV[r.GroupVersion] = m
		}
		if _, dup := m[r.Plural]; dup {
			return nil, fmt.Errorf("resource %s registered twice", r.GroupVersion.WithResource(r.Plural))
		}
		m[r.Plural] = r
	}
	return reg, nil
}

// Lookup finds a resource.
func (reg *Registry) Lookup(gv schema.GroupVersion, plural string) (*Resource, bool) {
	r, ok := reg.byGV[gv][plural]
	return r, ok
}

// groupVersions lists the served group versions, sorted, core first.
func (reg *Registry) groupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	for gv := range reg.byGV {
		out = append(out, gv)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Version < out[j].Version
	})
	return out
}

func (reg *Registry) resources(gv schema.GroupVersion) []*Resource {
	var out []*Resource
	for _, r := range reg.byGV[gv] {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Plural < out[j].Plural })
	return out
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
