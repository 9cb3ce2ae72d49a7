package apiserver

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requestInfo is what a resource URL names.
type requestInfo struct {
	gv          schema.GroupVersion
	plural      string
	namespace   string
	name        string
	subresource string
}

// namespaceSubresources are the words that, after /namespaces/NAME/, name a subresource
// of the namespace itself rather than a resource inside it.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseResourcePath splits /api/v1/... and /apis/GROUP/VERSION/... paths. ok is false
// for paths that do not name a resource (discovery and the like).
func parseResourcePath(path string) (requestInfo, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var info requestInfo
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.gv = schema.GroupVersion{Version: parts[1]}
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.gv = schema.GroupVersion{Group: parts[1], Version: parts[2]}
		parts = parts[3:]
	default:
		return info, false
	}
	if parts[0] == "namespaces" && len(parts) >= 3 && !namespaceSubresources[parts[2]] {
		info.namespace = parts[1]
		parts = parts[2:]
	}
	info.plural = parts[0]
	if len(parts) > 1 {
		info.name = parts[1]
	}
	if len(parts) > 2 {
		info.subresource = parts[2]
	}
	if len(parts) > 3 {
		return info, false
	}
	// /api/v1/namespaces/NAME[/status] names the namespace object itself.
	if info.plural == "namespaces" && info.name != "" && info.namespace == "" {
		return info, true
	}
	for _, p := range parts {
		if p == "" {
			return info, false
		}
	}
	return info, true
}
