package seccomp

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

func profileOf(typ corev1.SeccompProfileType, localhost string) *corev1.SeccompProfile {
	sp := &corev1.SeccompProfile{Type: typ}
	if localhost != "" {
		sp.LocalhostProfile = &localhost
	}
	return sp
}

func podWith(sp *corev1.SeccompProfile) *corev1.PodSpec {
	return &corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{SeccompProfile: sp}}
}

func containerWith(sp *corev1.SeccompProfile) *corev1.Container {
	return &corev1.Container{Name: "app", SecurityContext: &corev1.SecurityContext{SeccompProfile: sp}}
}

func TestChoose(t *testing.T) {
	local := profileOf(corev1.SeccompProfileTypeLocalhost, "team/app.json")
	rd := profileOf(corev1.SeccompProfileTypeRuntimeDefault, "")
	unconf := profileOf(corev1.SeccompProfileTypeUnconfined, "")
	for _, tc := range []struct {
		name           string
		pod            *corev1.PodSpec
		c              *corev1.Container
		privileged     bool
		seccompDefault bool
		want           Choice
	}{
		{"nothing set", &corev1.PodSpec{}, &corev1.Container{}, false, false, Choice{Type: corev1.SeccompProfileTypeUnconfined, From: "default"}},
		{"nothing set, seccompDefault", &corev1.PodSpec{}, &corev1.Container{}, false, true, Choice{Type: corev1.SeccompProfileTypeRuntimeDefault, From: "default"}},
		{"nil pod and container", nil, nil, false, false, Choice{Type: corev1.SeccompProfileTypeUnconfined, From: "default"}},
		{"pod only", podWith(local), &corev1.Container{}, false, false, Choice{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: "team/app.json", From: "pod"}},
		{"container security context without profile inherits", podWith(rd), &corev1.Container{SecurityContext: &corev1.SecurityContext{}}, false, false, Choice{Type: corev1.SeccompProfileTypeRuntimeDefault, From: "pod"}},
		{"container wins over pod", podWith(local), containerWith(rd), false, false, Choice{Type: corev1.SeccompProfileTypeRuntimeDefault, From: "container"}},
		{"container Unconfined wins over pod", podWith(rd), containerWith(unconf), false, true, Choice{Type: corev1.SeccompProfileTypeUnconfined, From: "container"}},
		{"container Localhost", podWith(unconf), containerWith(local), false, false, Choice{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: "team/app.json", From: "container"}},
		{"privileged is always Unconfined", podWith(rd), containerWith(local), true, true, Choice{Type: corev1.SeccompProfileTypeUnconfined, From: "privileged"}},
	} {
		if got := Choose(tc.pod, tc.c, tc.privileged, tc.seccompDefault); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestForContainer(t *testing.T) {
	requireLibseccomp(t)
	root, _ := profileTree(t)
	profiles := New(Config{Root: root})

	got, err := profiles.ForContainer(podWith(profileOf(corev1.SeccompProfileTypeLocalhost, "deny-mkdir.json")), &corev1.Container{}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.DefaultAction != specs.ActAllow || len(got.Syscalls) != 1 || got.Syscalls[0].Names[1] != "mkdirat" {
		t.Errorf("Localhost profile %+v", got)
	}

	got, err = profiles.ForContainer(&corev1.PodSpec{}, containerWith(profileOf(corev1.SeccompProfileTypeRuntimeDefault, "")), false, []string{"CAP_SYS_ADMIN"})
	if err != nil {
		t.Fatal(err)
	}
	if !allowedUnconditionally(got, "mount") {
		t.Error("RuntimeDefault for a container with CAP_SYS_ADMIN does not allow mount")
	}

	for _, privileged := range []bool{true, false} {
		c := containerWith(profileOf(corev1.SeccompProfileTypeLocalhost, "missing.json"))
		if privileged {
			c = containerWith(profileOf(corev1.SeccompProfileTypeUnconfined, ""))
		}
		got, err = profiles.ForContainer(&corev1.PodSpec{}, c, privileged, nil)
		if privileged && (err != nil || got != nil) {
			t.Errorf("privileged: %+v, %v; want Unconfined (nil)", got, err)
		}
		if !privileged {
			var pe *ProfileError
			if !errors.As(err, &pe) || pe.File != filepath.Join(root, "missing.json") || !strings.Contains(err.Error(), "no such file") {
				t.Errorf("missing profile: %v", err)
			}
		}
	}

	_, err = profiles.ForContainer(podWith(profileOf(corev1.SeccompProfileTypeLocalhost, "")), &corev1.Container{}, false, nil)
	if err == nil || !strings.Contains(err.Error(), "localhostProfile: empty") {
		t.Errorf("Localhost without a name: %v", err)
	}
	_, err = profiles.ForContainer(podWith(profileOf("Custom", "")), &corev1.Container{}, false, nil)
	if err == nil || !strings.Contains(err.Error(), `securityContext.seccompProfile.type: "Custom": unknown type`) {
		t.Errorf("unknown type: %v", err)
	}
}

func TestNewDefaultsTheRoot(t *testing.T) {
	if got := New(Config{}).Root(); got != DefaultRoot || DefaultRoot != "/var/lib/plinth/seccomp" {
		t.Errorf("root %q", got)
	}
}
