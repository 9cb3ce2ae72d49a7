package seccomp

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// What validation adds to each container creation: a Localhost profile read, parsed,
// checked and compiled, and the RuntimeDefault profile built (plinthd does not compile
// RuntimeDefault per container; its compile is measured for comparison).
func BenchmarkLoadLocalhostDenyMkdir(b *testing.B) {
	root, err := filepath.Abs("testdata/profiles")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := LoadLocalhost(Libseccomp{}, root, "deny-mkdir.json"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRuntimeDefault(b *testing.B) {
	for b.Loop() {
		_ = RuntimeDefault([]string{"CAP_CHOWN", "CAP_NET_BIND_SERVICE"})
	}
}

func BenchmarkValidateRuntimeDefault(b *testing.B) {
	p := RuntimeDefault(nil)
	for b.Loop() {
		if _, err := Validate(Libseccomp{}, "RuntimeDefault", p); err != nil {
			b.Fatal(err)
		}
	}
}

// The same through Profiles, whose cache skips the compile after the first container.
func BenchmarkForContainerLocalhostCached(b *testing.B) {
	root, err := filepath.Abs("testdata/profiles")
	if err != nil {
		b.Fatal(err)
	}
	profiles := New(Config{Root: root})
	name := "allowlist.json"
	pod := &corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{
		Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}}}
	for b.Loop() {
		if _, err := profiles.ForContainer(pod, &corev1.Container{}, false, nil); err != nil {
			b.Fatal(err)
		}
	}
}
