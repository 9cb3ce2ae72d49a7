package seccomp

import (
	"errors"
	"os"
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

// A Localhost profile is compiled once per content: the next container with the same
// file skips the compile, an edited file is read and compiled afresh, and no two
// containers share one profile value.
func TestForContainerCompilesEachProfileContentOnce(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "p.json")
	write := func(doc string) {
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	compiles := 0
	profiles := NewWithBackend(Config{Root: root}, fakeBackend{api: 6, known: map[string]bool{"mkdir": true, "rmdir": true}, compiles: &compiles})
	pod := podWith(profileOf(corev1.SeccompProfileTypeLocalhost, "p.json"))

	write(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","errnoRet":1}]}`)
	first, err := profiles.ForContainer(pod, &corev1.Container{}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	first.Syscalls[0].Names[0] = "changed"
	*first.Syscalls[0].ErrnoRet = 99
	second, err := profiles.ForContainer(pod, &corev1.Container{}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if compiles != 1 {
		t.Errorf("compiled %d times for one content, want 1", compiles)
	}
	if second.Syscalls[0].Names[0] != "mkdir" || *second.Syscalls[0].ErrnoRet != 1 {
		t.Errorf("a change to the first container's profile reached the second: %+v", second.Syscalls[0])
	}

	write(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["rmdir"],"action":"SCMP_ACT_ERRNO"}]}`)
	third, err := profiles.ForContainer(pod, &corev1.Container{}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if compiles != 2 || third.Syscalls[0].Names[0] != "rmdir" {
		t.Errorf("after an edit: %d compiles, profile %+v", compiles, third.Syscalls)
	}

	write(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["rmdir"],"action":"SCMP_ACT_NONE"}]}`)
	if _, err := profiles.ForContainer(pod, &corev1.Container{}, false, nil); err == nil || !strings.Contains(err.Error(), "SCMP_ACT_NONE") {
		t.Errorf("an edit breaking the profile: %v", err)
	}
}
