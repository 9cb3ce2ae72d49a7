//go:build linux

package pods

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/daemon/images"
	"github.com/plinth/plinth/daemon/images/imagetest"
	"github.com/plinth/plinth/daemon/podnet"
)

func TestPodnetNetworkAdapter(t *testing.T) {
	f, err := podnet.NewFake(netip.MustParsePrefix("10.244.1.0/24"))
	if err != nil {
		t.Fatal(err)
	}
	n := PodnetNetwork{f}
	const uid = "eeeeeeee-2222-3333-4444-555555555555"
	st, err := n.Setup(context.Background(), uid)
	if err != nil || len(st.IPs) != 1 || !strings.HasPrefix(st.IPs[0], "10.244.1.") || st.NetNSPath == "" {
		t.Fatalf("Setup = %+v, %v", st, err)
	}
	if err := n.Teardown(context.Background(), uid); err != nil {
		t.Fatal(err)
	}
	if setups, teardowns := f.Calls(uid); setups != 1 || teardowns != 1 {
		t.Errorf("podnet saw %d setups and %d teardowns", setups, teardowns)
	}
}

// TestPodFromARegistry runs a pod whose image is pulled by daemon/images from a
// registry on loopback: the image's entrypoint runs, its output is in the CRI log and
// the status carries the image ID; an unknown image waits in ErrImagePull with the
// Store's reason.
func TestPodFromARegistry(t *testing.T) {
	e := newWorkerEnv(t)
	reg := imagetest.NewRegistry(t)
	ref := reg.PushBusybox(t, "test/hello:v1", "/bin/sh", "-c", "echo hello from the registry")
	store, err := images.Open(images.Options{Root: filepath.Join(t.TempDir(), "images")})
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Images = StoreImages{store}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "reg", Namespace: "ns", UID: types.UID("ffffffff-2222-3333-4444-555555555555")},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{
			{Name: "hello", Image: ref},
			{Name: "nope", Image: strings.Replace(ref, "hello:v1", "absent:v1", 1)},
		}}}
	e.run(t, pod)
	s := e.until(t, 0, "hello done, nope failing", func(s corev1.PodStatus) bool {
		c := s.ContainerStatuses
		return len(c) == 2 && c[0].State.Terminated != nil && c[1].State.Waiting != nil
	})
	hello := s.ContainerStatuses[0]
	if hello.State.Terminated.ExitCode != 0 || !strings.HasPrefix(hello.ImageID, "sha256:") {
		t.Errorf("hello: %+v", hello)
	}
	if w := s.ContainerStatuses[1].State.Waiting; w.Reason != "ImagePullBackOff" && w.Reason != "ErrImagePull" {
		t.Errorf("unknown image waits with %+v", w)
	}
	var pe *ImagePullError
	_, err = StoreImages{store}.EnsureImage(context.Background(), ImageRequest{Image: "bad image name"})
	if !errors.As(err, &pe) || pe.Reason != "InvalidImageName" {
		t.Errorf("invalid name: %v (reason %q)", err, func() string {
			if pe != nil {
				return pe.Reason
			}
			return ""
		}())
	}
	b, err := os.ReadFile(filepath.Join(e.cfg.LogsDir, "ns_reg_"+string(pod.UID), "hello", "0.log"))
	if err != nil || !strings.Contains(string(b), " stdout F hello from the registry") {
		t.Errorf("log %q, %v", b, err)
	}
}
