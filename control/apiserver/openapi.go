package apiserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// serveOpenAPI answers /openapi/v3 and /openapi/v3/<group-version>. The documents are
// minimal: for every kind a path with the patch operation, its group-version-kind and
// the fieldValidation parameter, which is what kubectl looks for before it lets the
// server validate fields (kubectl apply --validate=strict); schemas are open objects.
func (s *Server) serveOpenAPI(w http.ResponseWriter, req *http.Request) bool {
	path := strings.TrimSuffix(req.URL.Path, "/")
	if path != "/openapi/v3" && !strings.HasPrefix(path, "/openapi/v3/") {
		return false
	}
	docs := s.openAPIDocuments()
	if path == "/openapi/v3" {
		index := map[string]map[string]map[string]string{"paths": {}}
		for key, doc := range docs {
			sum := sha256.Sum256(doc)
			index["paths"][key] = map[string]string{"serverRelativeURL": "/openapi/v3/" + key + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:]))}
		}
		writeJSON(w, http.StatusOK, index)
		return true
	}
	doc, ok := docs[strings.TrimPrefix(path, "/openapi/v3/")]
	if !ok {
		writeError(w, notFoundPath(path))
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc)
	return true
}

// openAPIDocuments builds one document per group version, keyed "api/v1" or
// "apis/GROUP/VERSION".
func (s *Server) openAPIDocuments() map[string][]byte {
	out := map[string][]byte{}
	for _, gv := range s.cfg.Registry.groupVersions() {
		key, prefix := "apis/"+gv.Group+"/"+gv.Version, "/apis/"+gv.Group+"/"+gv.Version
		if gv.Group == "" {
			key, prefix = "api/"+gv.Version, "/api/"+gv.Version
		}
		paths := map[string]any{}
		schemas := map[string]any{}
		for _, r := range s.cfg.Registry.resources(gv) {
			gvk := map[string]string{"group": gv.Group, "version": gv.Version, "kind": r.Kind}
			item := prefix + "/" + r.Plural + "/{name}"
			params := []any{pathParam("name")}
			if r.Namespaced {
				item = prefix + "/namespaces/{namespace}/" + r.Plural + "/{name}"
				params = append(params, pathParam("namespace"))
			}
			ref := map[string]any{"$ref": "#/components/schemas/" + schemaName(gv, r.Kind)}
			op := func(action string, query ...string) map[string]any {
				o := map[string]any{
					"x-kubernetes-action":             action,
					"x-kubernetes-group-version-kind": gvk,
					"operationId":                     action + r.Kind,
					"responses":                       map[string]any{"200": map[string]any{"description": "OK", "content": map[string]any{"application/json": map[string]any{"schema": ref}}}},
				}
				var qs []any
				for _, q := range query {
					qs = append(qs, map[string]any{"name": q, "in": "query", "schema": map[string]any{"type": "string", "uniqueItems": true}})
				}
				if len(qs) > 0 {
					o["parameters"] = qs
				}
				return o
			}
			paths[item] = map[string]any{
				"parameters": params,
				"get":        op("get"),
				"put":        op("put", "dryRun", "fieldManager", "fieldValidation"),
				"patch":      op("patch", "dryRun", "fieldManager", "fieldValidation", "force"),
				"delete":     op("delete", "dryRun", "gracePeriodSeconds", "propagationPolicy"),
			}
			schemas[schemaName(gv, r.Kind)] = map[string]any{
				"type":                                 "object",
				"x-kubernetes-group-version-kind":      []any{gvk},
				"x-kubernetes-preserve-unknown-fields": true,
			}
		}
		doc, _ := json.Marshal(map[string]any{
			"openapi":    "3.0.0",
			"info":       map[string]string{"title": "Plinth", "version": gv.String()},
			"paths":      paths,
			"components": map[string]any{"schemas": schemas},
		})
		out[key] = doc
	}
	return out
}

func pathParam(name string) map[string]any {
	return map[string]any{"name": name, "in": "path", "required": true, "schema": map[string]any{"type": "string", "uniqueItems": true}}
}

func schemaName(gv schema.GroupVersion, kind string) string {
	g := gv.Group
	if g == "" {
		g = "core"
	}
	return "plinth." + g + "." + gv.Version + "." + kind
}
