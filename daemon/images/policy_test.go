package images

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDefaultPullPolicy(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"busybox":                        corev1.PullAlways,
		"busybox:latest":                 corev1.PullAlways,
		"registry:5000/team/app":         corev1.PullAlways,
		"busybox:1.36":                   corev1.PullIfNotPresent,
		"registry:5000/team/app:v2":      corev1.PullIfNotPresent,
		"busybox@sha256:" + hex64('a'):   corev1.PullIfNotPresent,
		"Not A Valid Reference!!":        corev1.PullIfNotPresent,
		"quay.io/org/app:latest-release": corev1.PullIfNotPresent,
	} {
		if got := DefaultPullPolicy(image); got != want {
			t.Errorf("DefaultPullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}

func TestDecidePull(t *testing.T) {
	cases := []struct {
		image   string
		policy  corev1.PullPolicy
		present bool
		want    PullDecision
	}{
		{"app:v1", corev1.PullAlways, true, Pull},
		{"app:v1", corev1.PullAlways, false, Pull},
		{"app:v1", corev1.PullIfNotPresent, true, UseLocal},
		{"app:v1", corev1.PullIfNotPresent, false, Pull},
		{"app:v1", corev1.PullNever, true, UseLocal},
		{"app:v1", corev1.PullNever, false, FailNeverPull},
		{"app:v1", "", true, UseLocal},  // defaults to IfNotPresent
		{"app", "", true, Pull},         // latest defaults to Always
		{"app:latest", "", false, Pull}, // latest defaults to Always
		{"app:v1", "", false, Pull},     // IfNotPresent, missing
	}
	for _, c := range cases {
		got, err := DecidePull(c.image, c.policy, c.present)
		if err != nil || got != c.want {
			t.Errorf("DecidePull(%q, %q, present=%v) = %s, %v; want %s", c.image, c.policy, c.present, got, err, c.want)
		}
	}
	if _, err := DecidePull("app:v1", "Sometimes", true); err == nil {
		t.Error("an unknown policy was accepted")
	}
}

func TestReasonMapsEveryPullError(t *testing.T) {
	for _, reason := range []error{ErrImagePull, ErrImagePullBackOff, ErrImageNeverPull, ErrInvalidImageName} {
		err := error(&PullError{Image: "x", Reason: reason, Err: errors.New("cause")})
		if got := Reason(err); got != reason.Error() {
			t.Errorf("Reason(%v) = %q, want %q", err, got, reason.Error())
		}
	}
	if Reason(errors.New("other")) != "" || Reason(nil) != "" {
		t.Error("Reason of a non-pull error is not empty")
	}
	if _, err := ParseReference("UPPER/Case::bad"); Reason(err) != "InvalidImageName" {
		t.Errorf("bad reference gives %v, want InvalidImageName", err)
	}
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
