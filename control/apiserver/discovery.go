package apiserver

import (
	"net/http"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// allVerbs are the verbs every resource supports.
var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// serveDiscovery answers the legacy discovery documents. Clients that ask for aggregated
// discovery get these too, marked application/json, and fall back to reading them.
func (s *Server) serveDiscovery(w http.ResponseWriter, req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	path := strings.TrimSuffix(req.URL.Path, "/")
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	reg := s.cfg.Registry
	switch {
	case path == "/api":
		writeJSON(w, http.StatusOK, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: req.Host},
			},
		})
	case path == "/apis":
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, g := range s.groups() {
			list.Groups = append(list.Groups, g)
		}
		writeJSON(w, http.StatusOK, list)
	case len(parts) == 2 && parts[0] == "apis":
		for _, g := range s.groups() {
			if g.Name == parts[1] {
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				writeJSON(w, http.StatusOK, &g)
				return true
			}
		}
		writeError(w, notFoundPath(path))
	case len(parts) == 2 && parts[0] == "api":
		return s.writeResourceList(w, schema.GroupVersion{Version: parts[1]}, reg)
	case len(parts) == 3 && parts[0] == "apis":
		return s.writeResourceList(w, schema.GroupVersion{Group: parts[1], Version: parts[2]}, reg)
	default:
		return false
	}
	return true
}

func (s *Server) groups() []metav1.APIGroup {
	var out []metav1.APIGroup
	for _, gv := range s.cfg.Registry.groupVersions() {
		if gv.Group == "" {
			continue
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		if n := len(out); n > 0 && out[n-1].Name == gv.Group {
			out[n-1].Versions = append(out[n-1].Versions, v)
			continue
		}
		out = append(out, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return out
}

func (s *Server) writeResourceList(w http.ResponseWriter, gv schema.GroupVersion, reg *Registry) bool {
	resources := reg.resources(gv)
	if len(resources) == 0 {
		writeError(w, notFoundPath("/"+gv.String()))
		return true
	}
	list := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.String(),
	}
	for _, r := range resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r.Plural, SingularName: r.Singular, Namespaced: r.Namespaced, Kind: r.Kind,
			Verbs: allVerbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
		if r.HasStatus {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: r.Plural + "/status", Namespaced: r.Namespaced, Kind: r.Kind,
				Verbs: metav1.Verbs{"get", "patch", "update"},
			})
		}
		for _, name := range sortedKeys(r.Actions) {
			// kubectl drain looks for pods/eviction with its group, version and kind.
			res := metav1.APIResource{Name: r.Plural + "/" + name, Namespaced: r.Namespaced, Verbs: metav1.Verbs{"create"}}
			if kinds, _, err := clientscheme.Scheme.ObjectKinds(r.Actions[name].New()); err == nil && len(kinds) > 0 {
				res.Group, res.Version, res.Kind = kinds[0].Group, kinds[0].Version, kinds[0].Kind
			}
			list.APIResources = append(list.APIResources, res)
		}
		for _, name := range sortedKeys(r.Readers) {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: r.Plural + "/" + name, Namespaced: r.Namespaced, Kind: r.Readers[name].Kind, Verbs: metav1.Verbs{"get"},
			})
		}
	}
	writeJSON(w, http.StatusOK, list)
	return true
}
