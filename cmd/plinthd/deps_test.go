package main

import (
	"os/exec"
	"strings"
	"testing"
)

// plinthd's idle memory is mostly the pages of its binary that package initialisation
// touches (docs/benchmarks.md, "Idle"). client-go's clientset and scheme register
// every Kubernetes API group at start; plinthd speaks to the API through
// controlclient/nodeclient instead, and must not link them back in by accident.
func TestPlinthdDoesNotLinkTheClientset(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowedAPIGroups := map[string]bool{
		"k8s.io/api/core/v1": true, "k8s.io/api/coordination/v1": true,
		"k8s.io/api/policy/v1": true, "k8s.io/api/discovery/v1": true,
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case pkg == "k8s.io/client-go/kubernetes", strings.HasPrefix(pkg, "k8s.io/client-go/kubernetes/"),
			strings.HasPrefix(pkg, "k8s.io/client-go/applyconfigurations/"),
			pkg == "k8s.io/client-go/informers", strings.HasPrefix(pkg, "k8s.io/client-go/informers/"),
			pkg == "k8s.io/client-go/gentype", pkg == "k8s.io/client-go/testing":
			t.Errorf("plinthd links %s", pkg)
		case strings.HasPrefix(pkg, "k8s.io/api/") && !allowedAPIGroups[pkg]:
			t.Errorf("plinthd links the API group %s, which it does not use", pkg)
		}
	}
}
