package main

import (
	"os/exec"
	"strings"
	"testing"
)

// One shim runs per container, so its resident memory counts up to 110 times per node:
// it must not link the Kubernetes API types or clients, whose package initialisation
// alone costs megabytes.
func TestShimStaysSmall(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/") || strings.HasPrefix(pkg, "github.com/prometheus/") || strings.HasPrefix(pkg, "github.com/opencontainers/runtime-spec") {
			t.Errorf("plinth-shim links %s", pkg)
		}
	}
}
