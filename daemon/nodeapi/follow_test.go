package nodeapi

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/daemon/podlogs"
)

// changingPods is a PodSource whose one pod's container status the test changes.
type changingPods struct {
	mu  sync.Mutex
	pod corev1.Pod
}

func (c *changingPods) Pods() []corev1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return []corev1.Pod{*c.pod.DeepCopy()}
}

func (c *changingPods) setApp(id string, state corev1.ContainerState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: id, State: state}}
}

// TestFollowEndsWhenTheContainerStops: `kubectl logs -f` returns once the container
// exits, after its last lines, as with kubelet; while the status still shows it
// running, the follow goes on.
func TestFollowEndsWhenTheContainerStops(t *testing.T) {
	pods := &changingPods{pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"}}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	pods.setApp("plinth://a", running)
	h := startWithPods(t, pods)
	c := h.admin(t)
	path := podlogs.ContainerLogPath(h.logDir, "ns", "web", "uid-1", "app", 0)
	writeFile(t, path, now.Format(time.RFC3339Nano)+" stdout F first\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url+"/containerLogs/ns/web/app?follow=true", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := make(chan string, 1)
	go func() {
		all, _ := io.ReadAll(resp.Body)
		body <- string(all)
	}()
	step := func(polls int) {
		for range polls {
			deadline := time.Now().Add(5 * time.Second)
			for !h.clock.HasWaiters() {
				if time.Now().After(deadline) {
					t.Fatal("the follow never waited for more log")
				}
				runtime.Gosched()
			}
			h.clock.Step(podlogs.DefaultPollInterval)
		}
	}
	// Running, with nothing new: the follow keeps waiting.
	step(3)
	select {
	case got := <-body:
		t.Fatalf("the follow ended while the container runs: %q", got)
	default:
	}
	appendFile(t, path, now.Format(time.RFC3339Nano)+" stdout F last\n")
	pods.setApp("plinth://a", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}})
	got, ok := h.pollUntil(body)
	if !ok {
		t.Fatal("the follow did not end after the container terminated")
	}
	if got != "first\nlast\n" {
		t.Fatalf("followed log %q, want both lines", got)
	}
}

func TestContainerFinished(t *testing.T) {
	pods := &changingPods{pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"}}}
	s := &Server{cfg: Config{Pods: pods}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	done := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
	for _, tc := range []struct {
		name    string
		startID string
		nowID   string
		state   corev1.ContainerState
		uid     string
		want    bool
	}{
		{"still running", "a", "a", running, "uid-1", false},
		{"terminated", "a", "a", done, "uid-1", true},
		{"restarted into a new instance", "a", "b", running, "uid-1", true},
		{"status lagging behind a new container", "", "", corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}, "uid-1", false},
		{"status caught up with the running container", "", "a", running, "uid-1", false},
		{"status caught up with the exited container", "", "a", done, "uid-1", true},
		{"pod replaced by one with another UID", "a", "a", running, "uid-0", true},
	} {
		pods.setApp(tc.nowID, tc.state)
		if got := s.containerFinished("ns", "web", tc.uid, "app", tc.startID); got != tc.want {
			t.Errorf("%s: finished = %v, want %v", tc.name, got, tc.want)
		}
	}
}
