package config

import (
	"flag"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// parseFlags binds the flags on a fresh FlagSet, parses args and loads.
func parseFlags(t *testing.T, args ...string) (Config, []string, error) {
	t.Helper()
	fs := flag.NewFlagSet("plinthd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%q): %v", args, err)
	}
	return f.Load()
}

const fileForFlags = `kubeconfig: /etc/plinth/kubeconfig
registerNode: false
nodeLabels: {a: "1", b: "2"}
registerWithTaints: [{key: file, effect: NoSchedule}]
lockFile: /run/file.lock
stateDir: /srv/file-state
healthzBindAddress: 127.0.0.1:1
nodeIP: 192.0.2.1
hostnameOverride: file-node
`

func TestFlagsOverrideFiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{"plinthd.yaml": fileForFlags})
	c, files, err := parseFlags(t,
		"--config", filepath.Join(dir, "plinthd.yaml"),
		"--config-dir", filepath.Join(dir, "plinthd.d"),
		"--kubeconfig=",
		"--register-node=true",
		"--node-labels", "b=3,c=4",
		"--register-with-taints", "flag=x:NoExecute,other:PreferNoSchedule",
		"--lock-file", "/run/flag.lock",
		"--state-dir", "/srv/flag-state",
		"--healthz-bind-address", "0.0.0.0:2",
		"--node-ip", "2001:db8::1",
		"--hostname-override", "flag-node",
		"--node-api-bind-address", "127.0.0.1:10350",
		"--pod-logs-dir", "/srv/flag-logs",
		"--profiling-address", "127.0.0.1:6060",
	)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(files) != 1 {
		t.Errorf("files = %v, want the one main file", files)
	}
	want := Defaults()
	want.Kubeconfig = "" // an empty flag that was set still overrides
	want.RegisterNode = true
	want.NodeLabels = map[string]string{"a": "1", "b": "3", "c": "4"}
	want.RegisterWithTaints = []corev1.Taint{
		{Key: "flag", Value: "x", Effect: corev1.TaintEffectNoExecute},
		{Key: "other", Effect: corev1.TaintEffectPreferNoSchedule},
	}
	want.LockFile = "/run/flag.lock"
	want.StateDir = "/srv/flag-state"
	want.HealthzBindAddress = "0.0.0.0:2"
	want.NodeIP = "2001:db8::1"
	want.HostnameOverride = "flag-node"
	want.NodeAPIBindAddress = "127.0.0.1:10350"
	want.PodLogsDir = "/srv/flag-logs"
	want.ProfilingAddress = "127.0.0.1:6060"
	if !reflect.DeepEqual(c, want) {
		t.Errorf("config =\n%+v\nwant\n%+v", c, want)
	}
}

func TestUnsetFlagsDoNotOverrideFiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{"plinthd.yaml": fileForFlags})
	// Only --config is given; every other flag keeps its default, which must not
	// replace what the file says (registerNode false in the file, true by default).
	c, _, err := parseFlags(t, "--config", filepath.Join(dir, "plinthd.yaml"), "--config-dir", "")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want, _, err := Load(filepath.Join(dir, "plinthd.yaml"), true, "")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("config with no overriding flags =\n%+v\nwant the file's\n%+v", c, want)
	}
	if c.RegisterNode || c.LockFile != "/run/file.lock" {
		t.Errorf("registerNode=%v lockFile=%q, want the file's false and /run/file.lock", c.RegisterNode, c.LockFile)
	}
}

func TestFlagsWithoutFiles(t *testing.T) {
	dir := t.TempDir()
	// The default --config path is absent in a fresh directory; simulate that by
	// pointing at a missing drop-in dir and giving no --config (the real default
	// /etc/plinth/plinthd.yaml is absent on test machines too, but do not rely on it).
	fs := flag.NewFlagSet("plinthd", flag.ContinueOnError)
	f := BindFlags(fs)
	f.configFile = filepath.Join(dir, "plinthd.yaml") // as if it were the default path
	if err := fs.Parse([]string{"--config-dir", filepath.Join(dir, "plinthd.d"), "--register-node=false"}); err != nil {
		t.Fatal(err)
	}
	c, files, err := f.Load()
	if err != nil {
		t.Fatalf("Load with a missing default config file: %v", err)
	}
	want := Defaults()
	want.RegisterNode = false
	if len(files) != 0 || !reflect.DeepEqual(c, want) {
		t.Errorf("config = %+v from %v, want defaults with registerNode=false from no files", c, files)
	}
}

func TestFlagExplicitMissingConfigFails(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing.yaml")
	_, _, err := parseFlags(t, "--config", p, "--config-dir", "")
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("error = %v, want one naming %s", err, p)
	}
}

func TestEmptyTaintsFlagClearsFileTaints(t *testing.T) {
	dir := writeFiles(t, map[string]string{"plinthd.yaml": fileForFlags})
	c, _, err := parseFlags(t, "--config", filepath.Join(dir, "plinthd.yaml"), "--config-dir", "", "--register-with-taints=")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.RegisterWithTaints == nil || len(c.RegisterWithTaints) != 0 {
		t.Errorf("registerWithTaints = %#v, want an empty list", c.RegisterWithTaints)
	}
}

func TestRepeatedFlagsAccumulate(t *testing.T) {
	c, _, err := parseFlags(t, "--config", "", "--config-dir", "",
		"--node-labels", "a=1", "--node-labels", "b=2",
		"--register-with-taints", "x:NoSchedule", "--register-with-taints", "y=v:NoExecute")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if want := map[string]string{"a": "1", "b": "2"}; !reflect.DeepEqual(c.NodeLabels, want) {
		t.Errorf("nodeLabels = %v, want %v", c.NodeLabels, want)
	}
	if len(c.RegisterWithTaints) != 2 || c.RegisterWithTaints[1].Value != "v" {
		t.Errorf("registerWithTaints = %+v, want x and y=v", c.RegisterWithTaints)
	}
}

func TestFlagSyntaxErrors(t *testing.T) {
	cases := [][]string{
		{"--node-labels", "novalue"},
		{"--node-labels", "=v"},
		{"--node-labels", "a=1,a=2"},
		{"--node-labels", "a=1", "--node-labels", "a=2"},
		{"--register-with-taints", "key=value"},
		{"--register-with-taints", "key:NoScheduel"},
		{"--register-with-taints", ":NoSchedule"},
		{"--register-with-taints", "a:NoSchedule,,b:NoSchedule"},
		{"--register-node=maybe"},
	}
	for _, args := range cases {
		fs := flag.NewFlagSet("plinthd", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		BindFlags(fs)
		if err := fs.Parse(args); err == nil {
			t.Errorf("Parse(%q) succeeded", args)
		}
	}
}

func TestFlagValueErrorsNameTheFlag(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--node-ip", "10.0.0"}, []string{"flag --node-ip", "nodeIP", `"10.0.0"`}},
		{[]string{"--node-labels", "kubernetes.io/arch=arm64"}, []string{"flag --node-labels", "nodeLabels[kubernetes.io/arch]", "set by plinthd"}},
		{[]string{"--register-with-taints", "bad key:NoSchedule"}, []string{"flag --register-with-taints", "registerWithTaints[0].key", `"bad key"`}},
		{[]string{"--lock-file", "relative.lock"}, []string{"flag --lock-file", "lockFile", "absolute"}},
		{[]string{"--healthz-bind-address", "nope"}, []string{"flag --healthz-bind-address", `"nope"`}},
		{[]string{"--node-api-bind-address", "10250"}, []string{"flag --node-api-bind-address", "nodeAPIBindAddress", `"10250"`}},
		{[]string{"--pod-logs-dir", "logs"}, []string{"flag --pod-logs-dir", "podLogsDir", "absolute"}},
		{[]string{"--profiling-address", "6060"}, []string{"flag --profiling-address", "profilingAddress", `"6060"`}},
		{[]string{"--hostname-override", "Not_A_Name"}, []string{"flag --hostname-override", `"Not_A_Name"`}},
		{[]string{"--nodeport-addresses", "primary,10.0.0.0/8"}, []string{"flag --nodeport-addresses", "proxy.nodePortAddresses", `"primary,10.0.0.0/8"`}},
		{[]string{"--nodeport-addresses", "127.0.0.1/32"}, []string{"flag --nodeport-addresses", "loopback"}},
	}
	for _, tc := range cases {
		args := append([]string{"--config", "", "--config-dir", ""}, tc.args...)
		_, _, err := parseFlags(t, args...)
		if err == nil {
			t.Errorf("Load with %q succeeded", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Load with %q: error %q does not contain %q", tc.args, err, w)
			}
		}
	}
}

func TestFlagsLoadBeforeParseFails(t *testing.T) {
	fs := flag.NewFlagSet("plinthd", flag.ContinueOnError)
	f := BindFlags(fs)
	if _, _, err := f.Load(); err == nil {
		t.Error("Load before Parse succeeded")
	}
}

func TestFlagsAreRegistered(t *testing.T) {
	fs := flag.NewFlagSet("plinthd", flag.ContinueOnError)
	BindFlags(fs)
	names := []string{"config", "config-dir", "kubeconfig", "hostname-override", "node-ip", "register-node",
		"node-labels", "register-with-taints", "lock-file", "healthz-bind-address", "state-dir", "nodeport-addresses",
		"node-api-bind-address", "pod-logs-dir", "profiling-address", "fail-swap-on"}
	for _, n := range names {
		if fs.Lookup(n) == nil {
			t.Errorf("flag --%s is not registered", n)
		}
	}
	if got := fs.Lookup("config").DefValue; got != DefaultConfigFile {
		t.Errorf("--config default = %q, want %q", got, DefaultConfigFile)
	}
	if got := fs.Lookup("config-dir").DefValue; got != DefaultConfigDir {
		t.Errorf("--config-dir default = %q, want %q", got, DefaultConfigDir)
	}
	// Every flag that sets a Config field names a real field (sections by dots).
	for fl, name := range fieldOfFlag {
		if fs.Lookup(fl) == nil {
			t.Errorf("fieldOfFlag has unregistered flag %q", fl)
		}
		typ := reflect.TypeFor[Config]()
		for _, part := range strings.Split(name, ".") {
			ft, ok := jsonFields(typ)[part]
			if !ok {
				t.Errorf("flag --%s maps to unknown field %q", fl, name)
				break
			}
			typ = ft
		}
	}
}

func TestFlagValueStringRoundTrips(t *testing.T) {
	var l labelsValue
	if err := l.Set("b=2, a=1,c=x=y"); err != nil {
		t.Fatal(err)
	}
	if got, want := l.String(), "a=1,b=2,c=x=y"; got != want {
		t.Errorf("labels String() = %q, want %q", got, want)
	}
	var tv taintsValue
	if err := tv.Set("k=v:NoSchedule,k2:NoExecute,k3=:PreferNoSchedule"); err != nil {
		t.Fatal(err)
	}
	if got, want := tv.String(), "k=v:NoSchedule,k2:NoExecute,k3:PreferNoSchedule"; got != want {
		t.Errorf("taints String() = %q, want %q", got, want)
	}
}
