package pods

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func twoInitOneApp(policy corev1.RestartPolicy) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Spec: corev1.PodSpec{RestartPolicy: policy,
			InitContainers: []corev1.Container{{Name: "i1", Image: "busybox"}, {Name: "i2", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "app", Image: "busybox"}, {Name: "side", Image: "busybox"}}},
	}
}

func starts(actions []Action) []string {
	var out []string
	for _, a := range actions {
		out = append(out, a.Kind.String()+" "+a.Container)
	}
	return out
}

func TestBackoffDoublesCapsAndResets(t *testing.T) {
	var b Backoff
	now := t0
	var delays []time.Duration
	for range 8 {
		b.Failed(now, now.Add(time.Second))
		delays = append(delays, b.Delay)
		now = b.Until
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second, 300 * time.Second}
	if !reflect.DeepEqual(delays, want) {
		t.Errorf("delays = %v, want %v", delays, want)
	}
	if b.Ready(now.Add(-time.Nanosecond)) || !b.Ready(now) {
		t.Errorf("Ready around Until %v is wrong", b.Until)
	}
	// Ten minutes of running resets it.
	b.Failed(now, now.Add(BackoffReset))
	if b.Delay != InitialBackoff {
		t.Errorf("after a 10 min run the delay is %v, want %v", b.Delay, InitialBackoff)
	}
}

func TestPlanRunsInitContainersInOrderThenApps(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	pod := twoInitOneApp(corev1.RestartPolicyAlways)
	st := &PodState{}
	step := func(want ...string) {
		t.Helper()
		got, _ := Plan(pod, st, clk.Now())
		if !reflect.DeepEqual(starts(got), want) && !(len(want) == 0 && len(got) == 0) {
			t.Fatalf("Plan = %v, want %v", starts(got), want)
		}
	}
	run := func(name string) {
		st.Container(name).RecordStart(Run{ID: name, State: Running, StartedAt: clk.Now()})
	}
	exit := func(name string, code int) {
		clk.Step(time.Second)
		st.Container(name).RecordExit(Exit{FinishedAt: clk.Now(), ExitCode: code, Signal: 0, OOMKilled: false, Unknown: false}, clk.Now())
	}
	step("start i1")
	run("i1")
	step() // i1 runs: nothing else starts
	exit("i1", 1)
	// A failed init container restarts after its backoff.
	got, wake := Plan(pod, st, clk.Now())
	if len(got) != 0 || !wake.Equal(clk.Now().Add(InitialBackoff)) {
		t.Fatalf("failed init container: actions %v, wake %v; want a wait of %v", starts(got), wake, InitialBackoff)
	}
	clk.Step(InitialBackoff)
	step("start i1")
	run("i1")
	exit("i1", 0)
	step("start i2")
	run("i2")
	exit("i2", 0)
	step("start app", "start side")
}

func TestPlanRestartPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy  corev1.RestartPolicy
		code    int
		restart bool
	}{
		{corev1.RestartPolicyAlways, 0, true}, {corev1.RestartPolicyAlways, 1, true},
		{corev1.RestartPolicyOnFailure, 0, false}, {corev1.RestartPolicyOnFailure, 2, true},
		{corev1.RestartPolicyNever, 0, false}, {corev1.RestartPolicyNever, 2, false},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy, Containers: []corev1.Container{{Name: "c"}}}}
		st := &PodState{}
		st.Container("c").RecordStart(Run{ID: "1", State: Running, StartedAt: t0})
		st.Container("c").RecordExit(Exit{FinishedAt: t0.Add(time.Second), ExitCode: tc.code, Signal: 0, OOMKilled: false, Unknown: false}, t0.Add(time.Second))
		got, _ := Plan(pod, st, t0.Add(time.Hour))
		if (len(got) == 1) != tc.restart {
			t.Errorf("%s exit %d: actions %v, want restart %v", tc.policy, tc.code, starts(got), tc.restart)
		}
	}
}

func TestPlanKillsOnLivenessFailureAndSkipsDeletedPods(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	st := &PodState{}
	st.Container("c").RecordStart(Run{ID: "1", State: Running, StartedAt: t0})
	st.Container("c").LivenessFailed = true
	if got, _ := Plan(pod, st, t0); !reflect.DeepEqual(starts(got), []string{"kill c"}) {
		t.Errorf("liveness failure: %v", starts(got))
	}
	pod.DeletionTimestamp = &metav1.Time{Time: t0}
	if got, _ := Plan(pod, st, t0); len(got) != 0 {
		t.Errorf("deleted pod: %v", starts(got))
	}
}

func findCondition(s corev1.PodStatus, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

func TestStatusThroughALifecycle(t *testing.T) {
	pod := twoInitOneApp(corev1.RestartPolicyAlways)
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
	st := &PodState{PodIPs: []string{"10.244.0.7"}, HostIPs: []string{"192.168.0.2"}, StartTime: t0}
	now := t0

	s := ComputeStatus(pod, st, nil, now)
	if s.Phase != corev1.PodPending || findCondition(s, corev1.PodInitialized).Status != corev1.ConditionFalse ||
		s.ContainerStatuses[0].State.Waiting.Reason != "PodInitializing" || s.InitContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
		t.Fatalf("initial status: %+v", s)
	}
	if !strings.Contains(findCondition(s, corev1.PodInitialized).Message, "[i1 i2]") || s.PodIP != "10.244.0.7" || s.HostIP != "192.168.0.2" || s.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("initial details: %+v", s)
	}
	for _, n := range []string{"i1", "i2"} {
		st.Container(n).RecordStart(Run{ID: n, State: Running, StartedAt: now})
		st.Container(n).RecordExit(Exit{FinishedAt: now, ExitCode: 0, Signal: 0, OOMKilled: false, Unknown: false}, now)
	}
	for _, n := range []string{"app", "side"} {
		st.Container(n).RecordStart(Run{ID: n, State: Running, StartedAt: now, ImageID: "sha256:abc"})
	}
	prev := s
	now = now.Add(time.Minute)
	s = ComputeStatus(pod, st, &prev, now)
	if s.Phase != corev1.PodRunning || findCondition(s, corev1.PodInitialized).Status != corev1.ConditionTrue {
		t.Fatalf("running: phase %s, conditions %+v", s.Phase, s.Conditions)
	}
	if c := findCondition(s, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Message != "containers with unready status: [app]" {
		t.Errorf("Ready before the readiness probe passed: %+v", c)
	}
	if c := findCondition(s, corev1.PodScheduled); !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("PodScheduled transition time moved to %v though it did not change", c.LastTransitionTime)
	}
	st.Container("app").Ready = true
	s = ComputeStatus(pod, st, &s, now)
	if c := findCondition(s, corev1.PodReady); c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Time.Equal(now) {
		t.Errorf("Ready after the probe passed: %+v", c)
	}
	if cs := s.ContainerStatuses[0]; cs.ContainerID != "plinth://app" || cs.ImageID != "sha256:abc" || !cs.Ready || cs.Started == nil || !*cs.Started {
		t.Errorf("app status: %+v", cs)
	}

	// The app container is OOM-killed: lastState says so and the restart waits.
	st.Container("app").RecordExit(Exit{FinishedAt: now, ExitCode: 137, Signal: 9, OOMKilled: true, Unknown: false}, now)
	s = ComputeStatus(pod, st, &s, now.Add(time.Second))
	cs := s.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || !strings.Contains(cs.State.Waiting.Message, "back-off 10s restarting failed container=app pod=p_ns(u1)") {
		t.Errorf("crashed container state: %+v", cs.State)
	}
	if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.Reason != "OOMKilled" || cs.LastTerminationState.Terminated.ExitCode != 137 {
		t.Errorf("lastState: %+v", cs.LastTerminationState)
	}
	if s.Phase != corev1.PodRunning || findCondition(s, corev1.PodReady).Status != corev1.ConditionFalse {
		t.Errorf("crash looping pod: phase %s ready %s", s.Phase, findCondition(s, corev1.PodReady).Status)
	}
	st.Container("app").RecordStart(Run{ID: "app2", State: Running, StartedAt: now.Add(10 * time.Second)})
	s = ComputeStatus(pod, st, &s, now.Add(11*time.Second))
	if cs := s.ContainerStatuses[0]; cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ContainerID != "plinth://app" {
		t.Errorf("restarted container: %+v", cs)
	}
}

func TestStatusPhases(t *testing.T) {
	for _, tc := range []struct {
		policy corev1.RestartPolicy
		codes  []int
		want   corev1.PodPhase
		reason string
	}{
		{corev1.RestartPolicyNever, []int{0, 0}, corev1.PodSucceeded, "Completed"},
		{corev1.RestartPolicyNever, []int{0, 1}, corev1.PodFailed, "Completed"},
		{corev1.RestartPolicyOnFailure, []int{0, 0}, corev1.PodSucceeded, "Completed"},
		{corev1.RestartPolicyOnFailure, []int{1, 0}, corev1.PodRunning, ""},
		{corev1.RestartPolicyAlways, []int{0, 0}, corev1.PodRunning, ""},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy, Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
		st := &PodState{}
		for i, n := range []string{"a", "b"} {
			st.Container(n).RecordStart(Run{ID: n, State: Running, StartedAt: t0})
			st.Container(n).RecordExit(Exit{FinishedAt: t0.Add(time.Second), ExitCode: tc.codes[i], Signal: 0, OOMKilled: false, Unknown: false}, t0.Add(time.Second))
		}
		s := ComputeStatus(pod, st, nil, t0.Add(2*time.Second))
		if s.Phase != tc.want {
			t.Errorf("%s %v: phase %s, want %s", tc.policy, tc.codes, s.Phase, tc.want)
		}
		if term := s.ContainerStatuses[0].State.Terminated; tc.reason != "" && (term == nil || term.Reason != tc.reason) {
			t.Errorf("%s %v: first container state %+v, want terminated %s", tc.policy, tc.codes, s.ContainerStatuses[0].State, tc.reason)
		}
		if tc.want == corev1.PodSucceeded && findCondition(s, corev1.PodReady).Reason != "PodCompleted" {
			t.Errorf("succeeded pod Ready condition: %+v", findCondition(s, corev1.PodReady))
		}
	}
	// An init container failing under Never fails the pod.
	pod := twoInitOneApp(corev1.RestartPolicyNever)
	st := &PodState{}
	st.Container("i1").RecordStart(Run{ID: "i1", State: Running, StartedAt: t0})
	st.Container("i1").RecordExit(Exit{FinishedAt: t0, ExitCode: 3, Signal: 0, OOMKilled: false, Unknown: false}, t0)
	if s := ComputeStatus(pod, st, nil, t0); s.Phase != corev1.PodFailed || s.InitContainerStatuses[0].State.Terminated.Reason != "Error" {
		t.Errorf("failed init under Never: phase %s, %+v", s.Phase, s.InitContainerStatuses[0].State)
	}
}

func TestWaitingReasons(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nope"}}}}
	st := &PodState{}
	cs := st.Container("c")
	cs.Waiting = &Waiting{Reason: "ErrImagePull", Message: `pull "nope": not found`}
	cs.Backoff.Failed(time.Time{}, t0)
	s := ComputeStatus(pod, st, nil, t0)
	if w := s.ContainerStatuses[0].State.Waiting; w.Reason != "ImagePullBackOff" || !strings.Contains(w.Message, "not found") {
		t.Errorf("pull failure in backoff: %+v", w)
	}
	if w := ComputeStatus(pod, st, nil, t0.Add(InitialBackoff)).ContainerStatuses[0].State.Waiting; w.Reason != "ErrImagePull" {
		t.Errorf("pull failure after backoff: %+v", w)
	}
	cs.Waiting = &Waiting{Reason: "CreateContainerError", Message: "seccomp profile /var/lib/plinth/seccomp/x.json: no such file"}
	if w := ComputeStatus(pod, st, nil, t0).ContainerStatuses[0].State.Waiting; w.Reason != "CreateContainerError" || !strings.Contains(w.Message, "x.json") {
		t.Errorf("create failure: %+v", w)
	}
	if got, wake := Plan(pod, st, t0); len(got) != 0 || !wake.Equal(t0.Add(InitialBackoff)) {
		t.Errorf("Plan during backoff: %v wake %v", starts(got), wake)
	}
}
