package bundle

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPod(c corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns1", UID: "uid-1",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "hi"}},
		Spec: corev1.PodSpec{NodeName: "node-a", ServiceAccountName: "sa", Containers: []corev1.Container{c}},
	}
}

func testInput(c corev1.Container) Input {
	pod := testPod(c)
	return Input{
		Pod: pod, Container: &pod.Spec.Containers[0], ContainerID: "ctr1",
		Image:      ImageConfig{Entrypoint: []string{"/entry"}, Cmd: []string{"cmd1", "cmd2"}, Env: []string{"PATH=/img/bin", "IMG=1"}},
		RootfsPath: "rootfs",
		Sandbox: Sandbox{NetNSPath: "/run/netns/p", IPCNSPath: "/run/plinth/ns/ipc", UTSNSPath: "/run/plinth/ns/uts",
			Hostname: "web", HostsPath: "/pod/hosts", ResolvConfPath: "/pod/resolv.conf", HostnamePath: "/pod/hostname", ShmPath: "/pod/shm"},
		CgroupParent: "/plinth/poduid-1", TerminationLogPath: "/pod/ctr/termination-log",
		NodeMemoryBytes: 1 << 30, NodeMilliCPU: 2000, PodIP: "10.0.0.5", HostIP: "192.168.1.2",
		MinOOMScoreAdj: -1000, MaxNOFILE: 1 << 20,
	}
}

func mustBuild(t *testing.T, in Input) *specs.Spec {
	t.Helper()
	s, err := Build(in)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return s
}

func TestArgs(t *testing.T) {
	cases := []struct {
		name          string
		command, args []string
		env           []corev1.EnvVar
		want          []string
	}{
		{"image defaults", nil, nil, nil, []string{"/entry", "cmd1", "cmd2"}},
		{"args replace cmd", nil, []string{"a"}, nil, []string{"/entry", "a"}},
		{"command drops image cmd", []string{"/bin/x"}, nil, nil, []string{"/bin/x"}},
		{"command and args", []string{"/bin/x"}, []string{"y"}, nil, []string{"/bin/x", "y"}},
		{"expansion", []string{"echo", "$(A)"}, []string{"$(B)", "$$(A)", "$(IMG)"},
			[]corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "$(A)2"}},
			[]string{"echo", "1", "12", "$(A)", "$(IMG)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(corev1.Container{Name: "c", Image: "img", Command: tc.command, Args: tc.args, Env: tc.env})
			if got := mustBuild(t, in).Process.Args; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("args = %q, want %q", got, tc.want)
			}
		})
	}
	in := testInput(corev1.Container{Name: "c", Image: "img"})
	in.Image = ImageConfig{}
	if _, err := Build(in); err == nil || !strings.Contains(err.Error(), "spec.containers[0]") || !strings.Contains(err.Error(), `"img"`) {
		t.Errorf("no command: err = %v, want one naming the container and image", err)
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	cases := map[string]string{
		"plain":       "plain",
		"$(A)":        "x",
		"pre$(A)post": "prexpost",
		"$(UNDEF)":    "$(UNDEF)",
		"$$(A)":       "$(A)",
		"$$":          "$",
		"$":           "$",
		"a$b":         "a$b",
		"$(A":         "$(A",
		"$()":         "$()",
		"$(EMPTY)!":   "!",
		"$(A)$(A)":    "xx",
		"$$$(A)":      "$x",
		"$(A)$":       "x$",
		"x$(A)y$(B":   "xxy$(B",
		"${A}":        "${A}",
	}
	for in, want := range cases {
		if got := Expand(in, lookup); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEnv(t *testing.T) {
	in := testInput(corev1.Container{Name: "c", Image: "img", Env: []corev1.EnvVar{
		{Name: "IMG", Value: "override"},
		{Name: "X", Value: "$(IMG)-$(PATH)"}, // container IMG is defined; image PATH is not
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
		{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu"}}},
	}, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}})
	got := mustBuild(t, in).Process.Env
	want := []string{"HOSTNAME=web", "PATH=/img/bin", "IMG=override", "X=override-$(PATH)", "POD=web", "APP=web",
		"IP=10.0.0.5", "MEM=1024", "CPU=1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("env =\n %q\nwant\n %q", got, want)
	}

	in.Image.Env = nil
	if env := mustBuild(t, in).Process.Env; !slices.Contains(env, defaultPath) {
		t.Errorf("env without an image PATH lacks the default: %q", env)
	}
	bad := testInput(corev1.Container{Name: "c", Image: "img", Env: []corev1.EnvVar{
		{Name: "S", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.bogus"}}}}})
	if _, err := Build(bad); err == nil || !strings.Contains(err.Error(), "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath") || !strings.Contains(err.Error(), "spec.bogus") {
		t.Errorf("bad fieldRef: err = %v", err)
	}
}

func TestUser(t *testing.T) {
	users := ParseUsers([]byte("root:x:0:0::/root:/bin/sh\n#c\nbroken\nweb:x:1000:1001::/:/bin/sh\n"),
		[]byte("web:x:1001:\nextra:x:2000:web,other\nwheel:x:10:root\n"))
	i64 := func(v int64) *int64 { return &v }
	cases := []struct {
		name      string
		image     string
		pod       *corev1.PodSecurityContext
		ctr       *corev1.SecurityContext
		want      specs.User
		wantError string
	}{
		{name: "default root", want: specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{10}}},
		{name: "image name", image: "web", want: specs.User{UID: 1000, GID: 1001, AdditionalGids: []uint32{2000}}},
		{name: "image uid:gid", image: "1000:5", want: specs.User{UID: 1000, GID: 5, AdditionalGids: []uint32{2000}}},
		{name: "image unknown uid", image: "4242", want: specs.User{UID: 4242, GID: 0}},
		{name: "image unknown name", image: "nobody", wantError: `no user "nobody"`},
		{name: "image unknown group", image: "web:nogroup", wantError: `no group "nogroup"`},
		{name: "runAsUser wins", image: "web", pod: &corev1.PodSecurityContext{RunAsUser: i64(7)}, want: specs.User{UID: 7}},
		{name: "container over pod", pod: &corev1.PodSecurityContext{RunAsUser: i64(7), RunAsGroup: i64(8)},
			ctr: &corev1.SecurityContext{RunAsUser: i64(1000)}, want: specs.User{UID: 1000, GID: 8, AdditionalGids: []uint32{2000}}},
		{name: "groups", pod: &corev1.PodSecurityContext{RunAsUser: i64(5), SupplementalGroups: []int64{100, 5, 100}, FSGroup: i64(300)},
			want: specs.User{UID: 5, AdditionalGids: []uint32{100, 5, 300}}},
		{name: "nonroot refused", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}, wantError: "runAsNonRoot"},
		{name: "nonroot ok", image: "web", pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}, want: specs.User{UID: 1000, GID: 1001, AdditionalGids: []uint32{2000}}},
		{name: "negative uid", ctr: &corev1.SecurityContext{RunAsUser: i64(-1)}, wantError: "runAsUser: -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(corev1.Container{Name: "c", Image: "img", SecurityContext: tc.ctr})
			in.Pod.Spec.SecurityContext = tc.pod
			in.Image.User = tc.image
			in.Users = users
			s, err := Build(in)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Process.User, tc.want) {
				t.Errorf("user = %+v, want %+v", s.Process.User, tc.want)
			}
		})
	}
}

func TestCapabilitiesAndPrivilege(t *testing.T) {
	in := testInput(corev1.Container{Name: "c", Image: "img", SecurityContext: &corev1.SecurityContext{
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW", "cap_mknod"}, Add: []corev1.Capability{"NET_ADMIN"}},
		AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true)}})
	in.Seccomp = &specs.LinuxSeccomp{DefaultAction: specs.ActErrno}
	s := mustBuild(t, in)
	caps := s.Process.Capabilities.Bounding
	if slices.Contains(caps, "CAP_NET_RAW") || slices.Contains(caps, "CAP_MKNOD") || !slices.Contains(caps, "CAP_NET_ADMIN") || !slices.Contains(caps, "CAP_CHOWN") {
		t.Errorf("bounding = %q: want defaults without NET_RAW and MKNOD, with NET_ADMIN", caps)
	}
	if !reflect.DeepEqual(caps, s.Process.Capabilities.Effective) || len(s.Process.Capabilities.Inheritable) != 0 {
		t.Errorf("effective %q or inheritable %q differ from bounding", s.Process.Capabilities.Effective, s.Process.Capabilities.Inheritable)
	}
	if !s.Process.NoNewPrivileges || !s.Root.Readonly || s.Linux.Seccomp == nil || len(s.Linux.MaskedPaths) == 0 {
		t.Errorf("noNewPrivileges=%v readonly=%v seccomp=%v masked=%q", s.Process.NoNewPrivileges, s.Root.Readonly, s.Linux.Seccomp, s.Linux.MaskedPaths)
	}
	for _, m := range s.Mounts {
		if m.Destination == "/etc/hosts" && !slices.Contains(m.Options, "ro") {
			t.Errorf("/etc/hosts of a read-only root is writable: %v", m.Options)
		}
	}

	in = testInput(corev1.Container{Name: "c", Image: "img", SecurityContext: &corev1.SecurityContext{
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}}})
	if got := mustBuild(t, in).Process.Capabilities.Bounding; !reflect.DeepEqual(got, []string{"CAP_NET_BIND_SERVICE"}) {
		t.Errorf("drop ALL add one: %q", got)
	}
	if s := mustBuild(t, in); s.Process.NoNewPrivileges {
		t.Error("allowPrivilegeEscalation unset must leave no_new_privs off")
	}

	in = testInput(corev1.Container{Name: "c", Image: "img", SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}})
	in.Seccomp = &specs.LinuxSeccomp{DefaultAction: specs.ActErrno}
	s = mustBuild(t, in)
	if len(s.Process.Capabilities.Bounding) != len(allCapabilities) || s.Linux.Seccomp != nil || len(s.Linux.MaskedPaths) != 0 {
		t.Errorf("privileged: %d caps, seccomp %v, masked %q", len(s.Process.Capabilities.Bounding), s.Linux.Seccomp, s.Linux.MaskedPaths)
	}
	if d := s.Linux.Resources.Devices; len(d) != 1 || !d[0].Allow {
		t.Errorf("privileged devices = %+v, want allow all", d)
	}

	in = testInput(corev1.Container{Name: "c", Image: "img", SecurityContext: &corev1.SecurityContext{
		Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"FLY"}}}})
	if _, err := Build(in); err == nil || !strings.Contains(err.Error(), `capabilities.add[0]: "FLY"`) {
		t.Errorf("unknown capability: err = %v", err)
	}
}

func TestNamespaces(t *testing.T) {
	in := testInput(corev1.Container{Name: "c", Image: "img"})
	got := mustBuild(t, in).Linux.Namespaces
	want := []specs.LinuxNamespace{{Type: specs.MountNamespace}, {Type: specs.PIDNamespace},
		{Type: specs.NetworkNamespace, Path: "/run/netns/p"}, {Type: specs.UTSNamespace, Path: "/run/plinth/ns/uts"},
		{Type: specs.IPCNamespace, Path: "/run/plinth/ns/ipc"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("namespaces = %+v\nwant %+v", got, want)
	}
	in.Pod.Spec.HostNetwork, in.Pod.Spec.HostIPC, in.Pod.Spec.HostPID = true, true, true
	in.CgroupNamespace = true
	s := mustBuild(t, in)
	if want := []specs.LinuxNamespace{{Type: specs.MountNamespace}, {Type: specs.CgroupNamespace}}; !reflect.DeepEqual(s.Linux.Namespaces, want) {
		t.Errorf("host namespaces = %+v, want %+v", s.Linux.Namespaces, want)
	}
	if s.Hostname != "" || slices.ContainsFunc(s.Process.Env, func(e string) bool { return strings.HasPrefix(e, "HOSTNAME=") }) {
		t.Errorf("hostNetwork container sets hostname %q / env %q", s.Hostname, s.Process.Env)
	}
}

func TestMounts(t *testing.T) {
	prop := corev1.MountPropagationHostToContainer
	in := testInput(corev1.Container{Name: "c", Image: "img", Env: []corev1.EnvVar{{Name: "SUB", Value: "x"}},
		TerminationMessagePath: "/tmp/term",
		VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: "/data/deep/", ReadOnly: true},
			{Name: "cache", MountPath: "/data", SubPathExpr: "$(SUB)/y", MountPropagation: &prop},
			{Name: "shm", MountPath: "/dev/shm"},
		}})
	in.Volumes = map[string]string{"data": "/vol/data", "cache": "/vol/cache", "shm": "/vol/shm"}
	s := mustBuild(t, in)
	byDst := map[string]specs.Mount{}
	var order []string
	for _, m := range s.Mounts {
		if _, dup := byDst[m.Destination]; dup {
			t.Errorf("two mounts at %s", m.Destination)
		}
		byDst[m.Destination] = m
		order = append(order, m.Destination)
	}
	for _, d := range []string{"/proc", "/dev", "/dev/pts", "/dev/mqueue", "/sys", "/sys/fs/cgroup", "/etc/hosts", "/etc/resolv.conf", "/etc/hostname", "/tmp/term"} {
		if _, ok := byDst[d]; !ok {
			t.Errorf("no mount at %s; have %q", d, order)
		}
	}
	if m := byDst["/dev/shm"]; m.Source != "/vol/shm" {
		t.Errorf("/dev/shm from %q, want the volume replacing the pod's", m.Source)
	}
	if m := byDst["/data"]; m.Source != "/vol/cache/x/y" || !slices.Contains(m.Options, "rslave") {
		t.Errorf("/data = %+v", m)
	}
	if m := byDst["/data/deep"]; m.Source != "/vol/data" || !slices.Contains(m.Options, "ro") {
		t.Errorf("/data/deep = %+v", m)
	}
	if slices.Index(order, "/data") > slices.Index(order, "/data/deep") {
		t.Errorf("child mounted before parent: %q", order)
	}

	for _, tc := range []struct {
		vm   corev1.VolumeMount
		want string
	}{
		{corev1.VolumeMount{Name: "missing", MountPath: "/x"}, `volumeMounts[0].name: volume "missing"`},
		{corev1.VolumeMount{Name: "data", MountPath: "rel"}, `volumeMounts[0].mountPath: "rel"`},
		{corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "../etc"}, `volumeMounts[0].subPath: "../etc"`},
		{corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "/etc"}, `volumeMounts[0].subPath: "/etc"`},
	} {
		in := testInput(corev1.Container{Name: "c", Image: "img", VolumeMounts: []corev1.VolumeMount{tc.vm}})
		in.Volumes = map[string]string{"data": "/vol/data"}
		if _, err := Build(in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.vm, err, tc.want)
		}
	}
}

func TestResources(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	in := testInput(corev1.Container{Name: "c", Image: "img", Resources: corev1.ResourceRequirements{
		Requests: rl("cpu", "250m", "memory", "256Mi"), Limits: rl("cpu", "1500m", "memory", "512Mi")}})
	in.PidsLimit = 100
	s := mustBuild(t, in)
	r := s.Linux.Resources
	if *r.CPU.Shares != 256 || *r.CPU.Quota != 150000 || *r.CPU.Period != 100000 || *r.Memory.Limit != 512<<20 || r.Pids.Limit == nil || *r.Pids.Limit != 100 {
		t.Errorf("resources: shares %d quota %d period %d memory %d pids %+v", *r.CPU.Shares, *r.CPU.Quota, *r.CPU.Period, *r.Memory.Limit, r.Pids)
	}
	if s.Linux.CgroupsPath != "/plinth/poduid-1/ctr1" {
		t.Errorf("cgroupsPath = %q", s.Linux.CgroupsPath)
	}
	if got := *s.Process.OOMScoreAdj; got != 750 { // 1000 - 1000*256Mi/1Gi
		t.Errorf("burstable oom_score_adj = %d, want 750", got)
	}

	best := testInput(corev1.Container{Name: "c", Image: "img"})
	if s := mustBuild(t, best); *s.Linux.Resources.CPU.Shares != 2 || s.Linux.Resources.CPU.Quota != nil || s.Linux.Resources.Memory != nil || *s.Process.OOMScoreAdj != 1000 {
		t.Errorf("best effort: %+v oom %d", s.Linux.Resources, *s.Process.OOMScoreAdj)
	}
	// Requests equal to the limits, as the API defaults them from limits alone.
	g := testInput(corev1.Container{Name: "c", Image: "img", Resources: corev1.ResourceRequirements{
		Requests: rl("cpu", "1m", "memory", "1Gi"), Limits: rl("cpu", "1m", "memory", "1Gi")}})
	if s := mustBuild(t, g); *s.Process.OOMScoreAdj != -997 || *s.Linux.Resources.CPU.Quota != 1000 || *s.Linux.Resources.CPU.Shares != 2 {
		t.Errorf("guaranteed: oom %d quota %d shares %d", *s.Process.OOMScoreAdj, *s.Linux.Resources.CPU.Quota, *s.Linux.Resources.CPU.Shares)
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	in := testInput(corev1.Container{Name: "c", Image: "img"})
	in.ContainerID = "a/b"
	if _, err := Build(in); err == nil || !strings.Contains(err.Error(), `"a/b"`) {
		t.Errorf("bad id: %v", err)
	}
	in = testInput(corev1.Container{Name: "c", Image: "img", WorkingDir: "rel"})
	if _, err := Build(in); err == nil || !strings.Contains(err.Error(), `workingDir: "rel"`) {
		t.Errorf("relative workingDir: %v", err)
	}
	in = testInput(corev1.Container{Name: "c", Image: "img"})
	in.CgroupParent = "plinth/x"
	if _, err := Build(in); err == nil || !strings.Contains(err.Error(), "cgroup parent") {
		t.Errorf("relative cgroup parent: %v", err)
	}
}

func TestHostLimitsBoundRlimitsAndOOMScore(t *testing.T) {
	guaranteed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	g := testInput(corev1.Container{Name: "c", Image: "img", Resources: corev1.ResourceRequirements{Requests: guaranteed, Limits: guaranteed}})
	s := mustBuild(t, g)
	if want := []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 1024, Hard: 524288}}; !reflect.DeepEqual(s.Process.Rlimits, want) {
		t.Errorf("rlimits = %+v, want %+v", s.Process.Rlimits, want)
	}
	// A runtime without CAP_SYS_RESOURCE can neither raise its hard limit nor lower
	// oom_score_adj below its own.
	g.MaxNOFILE, g.MinOOMScoreAdj = 800, -500
	s = mustBuild(t, g)
	if want := []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 800, Hard: 800}}; !reflect.DeepEqual(s.Process.Rlimits, want) {
		t.Errorf("bounded rlimits = %+v, want %+v", s.Process.Rlimits, want)
	}
	if *s.Process.OOMScoreAdj != -500 {
		t.Errorf("guaranteed oom_score_adj with a floor of -500 = %d", *s.Process.OOMScoreAdj)
	}
	g.MaxNOFILE = 0
	if s := mustBuild(t, g); s.Process.Rlimits != nil {
		t.Errorf("MaxNOFILE 0 should inherit, got %+v", s.Process.Rlimits)
	}
}
