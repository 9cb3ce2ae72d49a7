package sandbox

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHostsFile(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns"},
		Spec: corev1.PodSpec{Subdomain: "web", HostAliases: []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"a", "b"}}}}}
	host, fqdn := Hostname(pod, "cluster.local")
	if host != "web-0" || fqdn != "web-0.web.ns.svc.cluster.local" {
		t.Fatalf("Hostname = %q, %q", host, fqdn)
	}
	b, err := HostsFile(pod, []string{"10.244.0.5"}, host, fqdn)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"127.0.0.1\tlocalhost\n", "10.244.0.5\tweb-0.web.ns.svc.cluster.local\tweb-0\n", "10.1.2.3\ta\tb\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("hosts file lacks %q:\n%s", want, b)
		}
	}
	pod.Spec.HostAliases[0].IP = "nope"
	if _, err := HostsFile(pod, nil, host, ""); err == nil || !strings.Contains(err.Error(), `spec.hostAliases[0].ip: "nope"`) {
		t.Errorf("bad alias: %v", err)
	}
	long := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 62) + "-b"}}
	if h, _ := Hostname(long, ""); len(h) > 63 || strings.HasSuffix(h, "-") {
		t.Errorf("long hostname %q", h)
	}
}
