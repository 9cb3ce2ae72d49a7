package poddefaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPullPolicyDefault(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"nginx":                            corev1.PullAlways,
		"nginx:latest":                     corev1.PullAlways,
		"nginx:1.27":                       corev1.PullIfNotPresent,
		"registry.local:5000/team/app":     corev1.PullAlways, // the registry's port is no tag
		"registry.local:5000/team/app:v2":  corev1.PullIfNotPresent,
		"nginx@sha256:0123456789abcdef":    corev1.PullIfNotPresent,
		"nginx:latest@sha256:0123456789ab": corev1.PullIfNotPresent,
	} {
		if got := PullPolicyFor(image); got != want {
			t.Errorf("PullPolicyFor(%q) = %s, want %s", image, got, want)
		}
	}
}

func TestApplyFillsOnlyWhatIsMissing(t *testing.T) {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	s := corev1.PodSpec{
		HostNetwork: true,
		Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36",
			Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
			Resources:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
			ReadinessProbe: probe,
		}},
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox", ImagePullPolicy: corev1.PullNever}},
	}
	Apply(&s)
	c := s.Containers[0]
	if s.RestartPolicy != corev1.RestartPolicyAlways || s.DNSPolicy != corev1.DNSClusterFirst || *s.TerminationGracePeriodSeconds != 30 ||
		s.SchedulerName != corev1.DefaultSchedulerName || s.EnableServiceLinks == nil || !*s.EnableServiceLinks || s.SecurityContext == nil {
		t.Errorf("pod spec defaults: %+v", s)
	}
	if c.ImagePullPolicy != corev1.PullIfNotPresent || c.TerminationMessagePath != corev1.TerminationMessagePathDefault ||
		c.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Errorf("container defaults: %+v", c)
	}
	if p := c.Ports[0]; p.Protocol != corev1.ProtocolTCP || p.HostPort != 8080 {
		t.Errorf("port on the host network: %+v, want TCP with hostPort 8080", p)
	}
	if req := c.Resources.Requests[corev1.ResourceMemory]; req.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("memory request %s, want the limit 64Mi", req.String())
	}
	if p := c.ReadinessProbe; p.TimeoutSeconds != 1 || p.PeriodSeconds != 10 || p.SuccessThreshold != 1 || p.FailureThreshold != 3 {
		t.Errorf("probe defaults: %+v", p)
	}
	if s.InitContainers[0].ImagePullPolicy != corev1.PullNever {
		t.Errorf("an explicit pull policy was replaced: %s", s.InitContainers[0].ImagePullPolicy)
	}
	again := s.DeepCopy()
	Apply(again)
	if !equality.Semantic.DeepEqual(&s, again) {
		t.Errorf("applying the defaults twice changed the spec:\n%+v\n%+v", s, *again)
	}
}
