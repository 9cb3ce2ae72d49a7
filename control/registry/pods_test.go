package registry

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func newPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
}

func fieldsOf(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func hasField(errs field.ErrorList, f string) bool {
	for _, e := range errs {
		if e.Field == f {
			return true
		}
	}
	return false
}

func TestPodDefaults(t *testing.T) {
	p := newPod()
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	defaultPod(p)
	s := p.Spec
	if s.RestartPolicy != corev1.RestartPolicyAlways || s.DNSPolicy != corev1.DNSClusterFirst || *s.TerminationGracePeriodSeconds != 30 ||
		s.SchedulerName != "default-scheduler" || !*s.EnableServiceLinks || s.SecurityContext == nil {
		t.Fatalf("pod spec defaults: %+v", s)
	}
	c := s.Containers[0]
	if c.ImagePullPolicy != corev1.PullAlways || c.TerminationMessagePath != "/dev/termination-log" || c.TerminationMessagePolicy != corev1.TerminationMessageReadFile || c.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("container defaults: %+v", c)
	}
	if !c.Resources.Requests.Cpu().Equal(resource.MustParse("1")) || p.Status.QOSClass != corev1.PodQOSGuaranteed || p.Status.Phase != corev1.PodPending {
		t.Fatalf("requests %v, QoS %s, phase %s: want requests from limits, Guaranteed, Pending", c.Resources.Requests, p.Status.QOSClass, p.Status.Phase)
	}
	// Defaulting again changes nothing (it runs on every update).
	again := p.DeepCopy()
	defaultPod(again)
	if len(again.Spec.Tolerations) != 2 {
		t.Fatalf("second defaulting added tolerations: %+v", again.Spec.Tolerations)
	}
}

func TestNotReadyTolerations(t *testing.T) {
	secs := int64(60)
	for _, tc := range []struct {
		name string
		own  []corev1.Toleration
		want map[string]int64 // key -> tolerationSeconds of the NoExecute toleration
	}{
		{"none of its own", nil, map[string]int64{corev1.TaintNodeNotReady: 300, corev1.TaintNodeUnreachable: 300}},
		{"its own not-ready", []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}},
			map[string]int64{corev1.TaintNodeNotReady: 60, corev1.TaintNodeUnreachable: 300}},
		{"tolerates every NoExecute taint", []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}, map[string]int64{}},
		{"tolerates everything", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, map[string]int64{}},
		{"a NoSchedule toleration does not count", []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			map[string]int64{corev1.TaintNodeNotReady: 300, corev1.TaintNodeUnreachable: 300}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod()
			p.Spec.Tolerations = tc.own
			defaultPod(p)
			got := map[string]int64{}
			for _, tol := range p.Spec.Tolerations {
				if tol.Key != "" && tol.Effect == corev1.TaintEffectNoExecute && tol.TolerationSeconds != nil {
					got[tol.Key] = *tol.TolerationSeconds
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("NoExecute tolerations %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("NoExecute tolerations %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestPodGracePeriod(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name      string
		node      string
		phase     corev1.PodPhase
		spec      *int64
		requested *int64
		want      int64
	}{
		{"bound, default", "n1", corev1.PodRunning, i64(30), nil, 30},
		{"bound, pod's own", "n1", corev1.PodRunning, i64(120), nil, 120},
		{"bound, requested", "n1", corev1.PodRunning, i64(30), i64(5), 5},
		{"bound, requested zero (force)", "n1", corev1.PodRunning, i64(30), i64(0), 0},
		{"bound, negative request", "n1", corev1.PodRunning, i64(30), i64(-3), 1},
		{"unbound", "", corev1.PodPending, i64(30), i64(10), 0},
		{"succeeded", "n1", corev1.PodSucceeded, i64(30), nil, 0},
		{"failed", "n1", corev1.PodFailed, i64(30), i64(10), 0},
	} {
		p := newPod()
		p.Spec.NodeName, p.Status.Phase, p.Spec.TerminationGracePeriodSeconds = tc.node, tc.phase, tc.spec
		if got := podGracePeriod(p, tc.requested); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestPodValidation(t *testing.T) {
	valid := newPod()
	defaultPod(valid)
	if errs := validatePod(valid); len(errs) > 0 {
		t.Fatalf("a defaulted minimal pod is invalid: %v", errs)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		field  string
	}{
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil }, "spec.containers"},
		{"container name", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "App_1" }, "spec.containers[0].name"},
		{"duplicate across init", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "app", Image: "x", ImagePullPolicy: "Always", TerminationMessagePolicy: "File"}}
		}, "spec.containers[0].name"},
		{"no image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, "spec.containers[0].image"},
		{"image whitespace", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx " }, "spec.containers[0].image"},
		{"restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, "spec.restartPolicy"},
		{"dns policy None without config", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone }, "spec.dnsConfig"},
		{"port zero", func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Protocol: "TCP"}} }, "spec.containers[0].ports[0].containerPort"},
		{"port too high", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000, Protocol: "TCP"}}
		}, "spec.containers[0].ports[0].containerPort"},
		{"protocol", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: "ICMP"}}
		}, "spec.containers[0].ports[0].protocol"},
		{"port name", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "way-too-long-port-name", ContainerPort: 80, Protocol: "TCP"}}
		}, "spec.containers[0].ports[0].name"},
		{"negative request", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		}, "spec.containers[0].resources.requests[cpu]"},
		{"request above limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			}
		}, "spec.containers[0].resources.requests[memory]"},
		{"mount of a missing volume", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, "spec.containers[0].volumeMounts[0].name"},
		{"volume without source", func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: "data"}} }, "spec.volumes[0]"},
		{"env name", func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "1=x"}} }, "spec.containers[0].env[0].name"},
		{"empty toleration key with Equal", func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpEqual}} }, "spec.tolerations[0].operator"},
		{"tolerationSeconds without NoExecute", func(p *corev1.Pod) {
			s := int64(5)
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Exists", Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: &s}}
		}, "spec.tolerations[0].effect"},
		{"negative grace", func(p *corev1.Pod) { g := int64(-1); p.Spec.TerminationGracePeriodSeconds = &g }, "spec.terminationGracePeriodSeconds"},
		{"node name", func(p *corev1.Pod) { p.Spec.NodeName = "Node_1" }, "spec.nodeName"},
		{"sidecar policy on a main container", func(p *corev1.Pod) {
			always := corev1.ContainerRestartPolicyAlways
			p.Spec.Containers[0].RestartPolicy = &always
		}, "spec.containers[0].restartPolicy"},
	} {
		p := valid.DeepCopy()
		tc.mutate(p)
		errs := validatePod(p)
		if !hasField(errs, tc.field) {
			t.Errorf("%s: errors on %v, want one on %s", tc.name, fieldsOf(errs), tc.field)
		}
	}
}

func TestPodUpdateRules(t *testing.T) {
	old := newPod()
	deadline := int64(100)
	old.Spec.ActiveDeadlineSeconds = &deadline
	defaultPod(old)
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
		field  string // "" means allowed
	}{
		{"image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:2" }, ""},
		{"lower deadline", func(p *corev1.Pod) { d := int64(50); p.Spec.ActiveDeadlineSeconds = &d }, ""},
		{"raise deadline", func(p *corev1.Pod) { d := int64(500); p.Spec.ActiveDeadlineSeconds = &d }, "spec.activeDeadlineSeconds"},
		{"unset deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil }, "spec.activeDeadlineSeconds"},
		{"add toleration", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: "Exists"})
		}, ""},
		{"remove toleration", func(p *corev1.Pod) { p.Spec.Tolerations = p.Spec.Tolerations[1:] }, "spec.tolerations[0]"},
		{"restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever }, "spec"},
		{"container name", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "other" }, "spec"},
		{"labels", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, ""},
		{"become a mirror pod", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"kubernetes.io/config.mirror": "h"}
		}, "metadata.annotations[kubernetes.io/config.mirror]"},
	} {
		p := old.DeepCopy()
		tc.mutate(p)
		errs := validatePodUpdate(p, old)
		switch {
		case tc.field == "" && len(errs) > 0:
			t.Errorf("%s: refused: %v", tc.name, errs)
		case tc.field != "" && !hasField(errs, tc.field):
			t.Errorf("%s: errors on %v, want one on %s", tc.name, fieldsOf(errs), tc.field)
		}
	}
	p := old.DeepCopy()
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	if errs := validatePodUpdate(p, old); !strings.Contains(errs.ToAggregate().Error(), "spec.restartPolicy") {
		t.Errorf("the refusal does not name the changed field: %v", errs)
	}
	mirror := old.DeepCopy()
	mirror.Annotations = map[string]string{"kubernetes.io/config.mirror": "h1"}
	for name, m := range map[string]map[string]string{
		"change the hash": {"kubernetes.io/config.mirror": "h2"},
		"stop mirroring":  {"other": "x"},
	} {
		p := mirror.DeepCopy()
		p.Annotations = m
		if errs := validatePodUpdate(p, mirror); !hasField(errs, "metadata.annotations[kubernetes.io/config.mirror]") {
			t.Errorf("mirror pod: %s: errors on %v, want one on the mirror annotation", name, fieldsOf(errs))
		}
	}
	relabelled := mirror.DeepCopy()
	relabelled.Labels = map[string]string{"tier": "control-plane"}
	if errs := validatePodUpdate(relabelled, mirror); len(errs) > 0 {
		t.Errorf("relabelling a mirror pod refused: %v", errs)
	}
	done := old.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	back := done.DeepCopy()
	back.Status.Phase = corev1.PodRunning
	if errs := validatePodUpdate(back, done); !hasField(errs, "status.phase") {
		t.Errorf("a finished pod went back to Running: %v", errs)
	}
}

func TestPodRow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-10 * time.Minute))
	tr := true
	for _, tc := range []struct {
		name                   string
		mutate                 func(*corev1.Pod)
		ready, status, restart string
	}{
		{"pending", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }, "0/1", "Pending", "0"},
		{"running ready", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, "1/1", "Running", "0"},
		{"crash loop with restarts", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{
				Name: "app", RestartCount: 4,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(now.Add(-2 * time.Minute))}},
			}}
		}, "0/1", "CrashLoopBackOff", "4 (2m ago)"},
		{"init container running", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "x"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, "0/1", "Init:0/1", "0"},
		{"init container failed", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "x"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}}}
		}, "0/1", "Init:ExitCode:3", "0"},
		{"started sidecar counts", func(p *corev1.Pod) {
			always := corev1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "x", RestartPolicy: &always}}
			p.Status.Phase = corev1.PodRunning
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", Ready: true, Started: &tr, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, "2/2", "Running", "0"},
		{"completed", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
		}, "0/1", "Completed", "0"},
		{"terminating", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.DeletionTimestamp = &created
		}, "0/1", "Terminating", "0"},
		{"lost node", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Reason = "NodeLost"
			p.DeletionTimestamp = &created
		}, "0/1", "Unknown", "0"},
	} {
		p := newPod()
		p.CreationTimestamp = created
		tc.mutate(p)
		row := podRow(p, now)
		if len(row) != len(podColumns) {
			t.Fatalf("%s: %d cells for %d columns", tc.name, len(row), len(podColumns))
		}
		if row[0] != tc.ready || row[1] != tc.status || row[2] != tc.restart || row[3] != "10m" {
			t.Errorf("%s: READY %v STATUS %v RESTARTS %v AGE %v; want %s %s %s 10m", tc.name, row[0], row[1], row[2], row[3], tc.ready, tc.status, tc.restart)
		}
	}
	p := newPod()
	p.Status.PodIP, p.Spec.NodeName = "10.244.1.7", "n1"
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	row := podRow(p, now)
	if row[4] != "10.244.1.7" || row[5] != "n1" || row[6] != "<none>" || row[7] != "0/1" {
		t.Errorf("wide cells %v", row[4:])
	}
}
