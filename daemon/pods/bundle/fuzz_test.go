package bundle

import (
	"encoding/json"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// FuzzBuild feeds Build a pod spec and an image config as a peer could send them (JSON)
// and checks what any accepted spec must satisfy: a command to run, an absolute working
// directory, absolute mount destinations, known capabilities, and the same spec twice.
func FuzzBuild(f *testing.F) {
	seeds := []struct{ pod, image string }{
		{`{"containers":[{"name":"c","image":"busybox","command":["sh","-c","echo $(A)"],"env":[{"name":"A","value":"x"}]}]}`, `{"Cmd":["sh"]}`},
		{`{"containers":[{"name":"c","image":"i","args":["$(X)","$$(Y)"],"workingDir":"/w","securityContext":{"runAsUser":1000,"capabilities":{"add":["NET_ADMIN"],"drop":["ALL"]},"readOnlyRootFilesystem":true,"allowPrivilegeEscalation":false}}],"securityContext":{"fsGroup":5,"supplementalGroups":[1,2]}}`, `{"Entrypoint":["/e"],"User":"web:web"}`},
		{`{"hostNetwork":true,"hostPID":true,"containers":[{"name":"c","image":"i","securityContext":{"privileged":true},"volumeMounts":[{"name":"v","mountPath":"/v","subPath":"a/b","mountPropagation":"Bidirectional"}],"resources":{"limits":{"cpu":"2","memory":"1Gi"}}}]}`, `{"Cmd":["x"],"Env":["PATH=/bin","A=b"]}`},
		{`{"containers":[{"name":"c","image":"i","env":[{"name":"M","valueFrom":{"resourceFieldRef":{"resource":"limits.memory","divisor":"1Mi"}}},{"name":"L","valueFrom":{"fieldRef":{"fieldPath":"metadata.labels['a']"}}}],"volumeMounts":[{"name":"v","mountPath":"/a","subPathExpr":"$(L)"}]}]}`, `{"Cmd":["/x"],"WorkingDir":"/srv"}`},
		{`{"containers":[{"name":"c","image":"i","terminationMessagePath":"/dev/termination-log","resources":{"requests":{"cpu":"1m"}}}]}`, `{"Entrypoint":[""]}`},
	}
	for _, s := range seeds {
		f.Add(s.pod, s.image, "root:x:0:0::/:/bin/sh\nweb:x:1000:1000::/:/bin/sh\n", "web:x:1000:\n")
	}
	f.Fuzz(func(t *testing.T, podJSON, imageJSON, passwd, group string) {
		var spec corev1.PodSpec
		if json.Unmarshal([]byte(podJSON), &spec) != nil || len(spec.Containers) == 0 {
			return
		}
		var img ImageConfig
		if json.Unmarshal([]byte(imageJSON), &img) != nil {
			return
		}
		pod := &corev1.Pod{Spec: spec}
		pod.Name, pod.Namespace, pod.UID = "p", "ns", "u"
		in := Input{Pod: pod, Container: &pod.Spec.Containers[0], ContainerID: "c1", Image: img,
			Users: ParseUsers([]byte(passwd), []byte(group)), RootfsPath: "rootfs",
			Sandbox:      Sandbox{NetNSPath: "/n", IPCNSPath: "/i", UTSNSPath: "/u", Hostname: "p", HostsPath: "/h"},
			Volumes:      map[string]string{"v": "/vol"},
			CgroupParent: "/plinth/podu", TerminationLogPath: "/t", NodeMemoryBytes: 1 << 30, NodeMilliCPU: 1000}
		s, err := Build(in)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if len(s.Process.Args) == 0 || s.Process.Args[0] == "" {
			t.Fatalf("accepted spec with no command: %q", s.Process.Args)
		}
		if !path.IsAbs(s.Process.Cwd) {
			t.Fatalf("cwd %q is not absolute", s.Process.Cwd)
		}
		for _, m := range s.Mounts {
			if !path.IsAbs(m.Destination) || path.Clean(m.Destination) != m.Destination {
				t.Fatalf("mount destination %q is not absolute and clean", m.Destination)
			}
			if m.Type == "bind" && strings.Contains(m.Source, "..") && strings.HasPrefix(m.Source, "/vol") {
				t.Fatalf("volume source %q escapes the volume", m.Source)
			}
		}
		for _, c := range s.Process.Capabilities.Bounding {
			if !slices.Contains(allCapabilities, c) {
				t.Fatalf("unknown capability %q", c)
			}
		}
		again, err := Build(in)
		if err != nil || !reflect.DeepEqual(s, again) {
			t.Fatalf("Build is not deterministic: %v", err)
		}
	})
}

// FuzzExpand checks that expansion never panics, leaves strings without '$' alone, and
// with no variables defined only ever shortens "$$" escapes.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "$(A)", "$$(A)", "$(", "a$b", "$$$", "$(A)$(B", "$()"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		none := func(string) (string, bool) { return "", false }
		got := Expand(s, none)
		if !strings.Contains(s, "$") && got != s {
			t.Fatalf("Expand(%q) = %q changed a string without '$'", s, got)
		}
		if len(got) > len(s) {
			t.Fatalf("Expand(%q) = %q grew with no variables defined", s, got)
		}
		if !strings.Contains(s, "$$") && got != s {
			t.Fatalf("Expand(%q) = %q changed a string with no escapes and no defined variables", s, got)
		}
	})
}
