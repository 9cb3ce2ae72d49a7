package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// writeFiles creates files (name -> content) under a new temporary directory and
// returns the directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadDir loads dir/plinthd.yaml (which may be absent) with drop-ins from dir/plinthd.d.
func loadDir(t *testing.T, dir string) (Config, []string, error) {
	t.Helper()
	return Load(filepath.Join(dir, "plinthd.yaml"), false, filepath.Join(dir, "plinthd.d"))
}

func mustLoadDir(t *testing.T, dir string) (Config, []string) {
	t.Helper()
	c, files, err := loadDir(t, dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c, files
}

func TestLoadMissingDefaultFileGivesDefaults(t *testing.T) {
	dir := t.TempDir()
	c, files, err := Load(filepath.Join(dir, "plinthd.yaml"), false, filepath.Join(dir, "plinthd.d"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(files) != 0 {
		t.Errorf("files read = %v, want none", files)
	}
	if !reflect.DeepEqual(c, Defaults()) {
		t.Errorf("config = %+v, want defaults %+v", c, Defaults())
	}
}

func TestLoadMissingExplicitFileFails(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "plinthd.yaml")
	_, _, err := Load(p, true, "")
	if err == nil {
		t.Fatal("Load of a missing explicit file succeeded")
	}
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), p) {
		t.Errorf("error = %v, want a not-exist error naming %s", err, p)
	}
}

func TestLoadMissingDefaultFileStillReadsDropIns(t *testing.T) {
	dir := writeFiles(t, map[string]string{"plinthd.d/10.yaml": "maxPods: 7\n"})
	c, files, err := Load(filepath.Join(dir, "plinthd.yaml"), false, filepath.Join(dir, "plinthd.d"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.MaxPods != 7 {
		t.Errorf("maxPods = %d, want 7 from the drop-in", c.MaxPods)
	}
	if want := []string{filepath.Join(dir, "plinthd.d/10.yaml")}; !slices.Equal(files, want) {
		t.Errorf("files = %v, want %v", files, want)
	}
}

func TestLoadEmptyPathsMeanNone(t *testing.T) {
	c, files, err := Load("", true, "")
	if err != nil || len(files) != 0 || !reflect.DeepEqual(c, Defaults()) {
		t.Errorf("Load(\"\", true, \"\") = %+v, %v, %v; want defaults, no files, no error", c, files, err)
	}
}

func TestLoadDropInDirThatIsAFileFails(t *testing.T) {
	dir := writeFiles(t, map[string]string{"plinthd.d": "not a directory"})
	if _, _, err := Load("", false, filepath.Join(dir, "plinthd.d")); err == nil {
		t.Error("Load with a drop-in path that is a regular file succeeded")
	}
}

func TestMergeScalarOverride(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "maxPods: 50\nstateDir: /srv/plinth\nnodeStatusUpdateFrequency: 20s\n",
		"plinthd.d/10.yaml": "maxPods: 60\nnodeStatusUpdateFrequency: 30s\n",
		"plinthd.d/20.yaml": "kubeconfig: /etc/plinth/kubeconfig\n",
	})
	c, _ := mustLoadDir(t, dir)
	if c.MaxPods != 60 {
		t.Errorf("maxPods = %d, want 60 (drop-in overrides main file)", c.MaxPods)
	}
	if c.NodeStatusUpdateFrequency.Duration != 30*time.Second {
		t.Errorf("nodeStatusUpdateFrequency = %v, want 30s", c.NodeStatusUpdateFrequency.Duration)
	}
	if c.StateDir != "/srv/plinth" {
		t.Errorf("stateDir = %q, want /srv/plinth kept from the main file", c.StateDir)
	}
	if c.Kubeconfig != "/etc/plinth/kubeconfig" {
		t.Errorf("kubeconfig = %q, want the second drop-in's value", c.Kubeconfig)
	}
	if c.NodeLeaseDurationSeconds != 40 {
		t.Errorf("nodeLeaseDurationSeconds = %d, want default 40", c.NodeLeaseDurationSeconds)
	}
}

func TestMergeListReplacedWhole(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml": `registerWithTaints:
- {key: a, value: "1", effect: NoSchedule}
- {key: b, effect: NoExecute}
`,
		"plinthd.d/10.yaml": `registerWithTaints:
- {key: c, effect: PreferNoSchedule}
`,
	})
	c, _ := mustLoadDir(t, dir)
	want := []corev1.Taint{{Key: "c", Effect: corev1.TaintEffectPreferNoSchedule}}
	if !reflect.DeepEqual(c.RegisterWithTaints, want) {
		t.Errorf("registerWithTaints = %+v, want %+v (later list replaces the earlier one)", c.RegisterWithTaints, want)
	}
}

func TestMergeEmptyListClears(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "registerWithTaints: [{key: a, effect: NoSchedule}]\n",
		"plinthd.d/10.yaml": "registerWithTaints: []\n",
	})
	c, _ := mustLoadDir(t, dir)
	if len(c.RegisterWithTaints) != 0 {
		t.Errorf("registerWithTaints = %+v, want empty", c.RegisterWithTaints)
	}
}

func TestMergeMapKeyByKey(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "nodeLabels: {a: '1', b: '2', d: '4'}\nsystemReserved: {cpu: 100m}\n",
		"plinthd.d/10.yaml": "nodeLabels: {b: '3', c: '5'}\nsystemReserved: {memory: 256Mi}\n",
		"plinthd.d/20.yaml": "nodeLabels: {d: null}\n",
	})
	c, _ := mustLoadDir(t, dir)
	wantLabels := map[string]string{"a": "1", "b": "3", "c": "5"}
	if !reflect.DeepEqual(c.NodeLabels, wantLabels) {
		t.Errorf("nodeLabels = %v, want %v", c.NodeLabels, wantLabels)
	}
	wantReserved := map[string]string{"cpu": "100m", "memory": "256Mi"}
	if !reflect.DeepEqual(c.SystemReserved, wantReserved) {
		t.Errorf("systemReserved = %v, want %v", c.SystemReserved, wantReserved)
	}
}

func TestMergeNullRestoresDefault(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "maxPods: 50\nregisterNode: false\nnodeLabels: {a: b}\n",
		"plinthd.d/10.yaml": "maxPods: null\nregisterNode: ~\nnodeLabels: null\n",
	})
	c, _ := mustLoadDir(t, dir)
	d := Defaults()
	if c.MaxPods != d.MaxPods || c.RegisterNode != d.RegisterNode || c.NodeLabels != nil {
		t.Errorf("after nulls: maxPods=%d registerNode=%v nodeLabels=%v; want defaults %d, %v, nil",
			c.MaxPods, c.RegisterNode, c.NodeLabels, d.MaxPods, d.RegisterNode)
	}
}

// nestedConfig has the nested struct Config does not have yet, to test that nested
// structs merge field by field.
type nestedConfig struct {
	Name  string       `json:"name"`
	Inner nestedInner  `json:"inner"`
	Ptr   *nestedInner `json:"ptr"`
}

type nestedInner struct {
	A    string            `json:"a"`
	B    int32             `json:"b"`
	Deep nestedDeep        `json:"deep"`
	M    map[string]string `json:"m"`
}

type nestedDeep struct {
	First  string `json:"first"`
	Second string `json:"second"`
}

var nestedSchema = schema[nestedConfig]{
	defaults: func() nestedConfig {
		return nestedConfig{Inner: nestedInner{A: "default-a", B: 1, Deep: nestedDeep{First: "d1", Second: "d2"}}}
	},
	validate: func(c nestedConfig) field.ErrorList {
		if c.Inner.B < 0 {
			return field.ErrorList{field.Invalid(field.NewPath("inner", "b"), c.Inner.B, "must not be negative")}
		}
		return nil
	},
}

func TestMergeNestedStructFieldByField(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "name: main\ninner: {a: from-main, deep: {first: main-1}}\nptr: {a: p, b: 2}\n",
		"plinthd.d/10.yaml": "inner: {b: 5, deep: {second: dropin-2}}\nptr: {b: 3}\n",
	})
	c, _, err := loadMerged(nestedSchema, filepath.Join(dir, "plinthd.yaml"), true, filepath.Join(dir, "plinthd.d"))
	if err != nil {
		t.Fatalf("loadMerged: %v", err)
	}
	want := nestedConfig{
		Name:  "main",
		Inner: nestedInner{A: "from-main", B: 5, Deep: nestedDeep{First: "main-1", Second: "dropin-2"}},
		Ptr:   &nestedInner{A: "p", B: 3},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("merged = %+v (ptr %+v), want %+v (ptr %+v)", c, c.Ptr, want, want.Ptr)
	}
}

func TestMergeNestedErrorNamesPath(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml": "inner: {deep: {z: 1}, b: -1}\n",
	})
	p := filepath.Join(dir, "plinthd.yaml")
	_, _, err := loadMerged(nestedSchema, p, true, "")
	if err == nil || !strings.Contains(err.Error(), p+": inner.deep.z: Forbidden: unknown field (set to 1)") {
		t.Errorf("error = %v, want it to name %s and inner.deep.z", err, p)
	}
}

func TestDropInsLexicalOrderAndFiltering(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":              "maxPods: 1\n",
		"plinthd.d/10-a.yaml":       "maxPods: 10\n",
		"plinthd.d/20-b.yml":        "maxPods: 20\n",
		"plinthd.d/3-c.yaml":        "maxPods: 3\n", // "3-" sorts after "20-"
		"plinthd.d/99-z.conf":       "maxPods: 99\n",
		"plinthd.d/99-z.yaml.bak":   "maxPods: 98\n",
		"plinthd.d/README":          "not yaml at all: [",
		"plinthd.d/99.json":         "{\"maxPods\": 97}",
		"plinthd.d/dir.yaml/x.yaml": "maxPods: 96\n",
	})
	c, files := mustLoadDir(t, dir)
	if c.MaxPods != 3 {
		t.Errorf("maxPods = %d, want 3 from the lexically last .yaml/.yml drop-in", c.MaxPods)
	}
	want := []string{
		filepath.Join(dir, "plinthd.yaml"),
		filepath.Join(dir, "plinthd.d/10-a.yaml"),
		filepath.Join(dir, "plinthd.d/20-b.yml"),
		filepath.Join(dir, "plinthd.d/3-c.yaml"),
	}
	if !slices.Equal(files, want) {
		t.Errorf("files = %v, want %v", files, want)
	}
}

func TestLoadErrorsNameFileFieldAndValue(t *testing.T) {
	cases := []struct {
		name    string
		content string
		want    []string // substrings of the error, after the file name
	}{
		{"unknown field in list element", `registerWithTaints:
- {key: a, effect: NoSchedule}
- {key: b, efect: NoSchedule}
`, []string{`registerWithTaints[1].efect`, `unknown field (set to "NoSchedule")`, "fields accepted here: effect, key, timeAdded, value"}},
		{"unknown top-level field", "evictionHardd: {a: b}\n", []string{"evictionHardd", `{"a":"b"}`}},
		{"case mismatch", "MaxPods: 3\n", []string{"MaxPods", `did you mean "maxPods"`}},
		{"string for integer", "maxPods: lots\n", []string{"maxPods", `"lots"`, "is a string, must be a whole number"}},
		{"integer overflow", "maxPods: 99999999999\n", []string{"maxPods", "99999999999", "fits in 32 bits"}},
		{"fraction for integer", "nodeLeaseDurationSeconds: 1.5\n", []string{"nodeLeaseDurationSeconds", "1.5", "fractional"}},
		{"number for duration", "nodeStatusUpdateFrequency: 10\n", []string{"nodeStatusUpdateFrequency", "10", `a duration string such as "10s"`}},
		{"bad duration", "nodeStatusReportFrequency: 5 minutes\n", []string{"nodeStatusReportFrequency", `"5 minutes"`, "duration"}},
		{"string for bool", "registerNode: maybe\n", []string{"registerNode", `"maybe"`, "true or false"}},
		{"list for map", "nodeLabels: [a, b]\n", []string{"nodeLabels", `["a","b"]`, "is a list, must be a mapping"}},
		{"number in label map", "nodeLabels: {a: 1}\n", []string{"nodeLabels[a]", "1", "must be a string"}},
		{"null list element", "registerWithTaints: [null]\n", []string{"registerWithTaints[0]", "cannot be null"}},
		{"bad taint effect", `registerWithTaints:
- {key: a, effect: NoSchedule}
- {key: b, effect: NoScheduel}
`, []string{`registerWithTaints[1].effect`, `"NoScheduel"`, `"NoSchedule"`}},
		{"taint timeAdded", "registerWithTaints: [{key: a, effect: NoExecute, timeAdded: '2024-01-01T00:00:00Z'}]\n", []string{"registerWithTaints[0].timeAdded", "control plane"}},
		{"bad label key", "nodeLabels: {'-bad': x}\n", []string{"nodeLabels[-bad]", `"-bad"`, "label key"}},
		{"reserved label", "nodeLabels: {kubernetes.io/hostname: h}\n", []string{"nodeLabels[kubernetes.io/hostname]", "set by plinthd itself"}},
		{"k8s.io domain label", "nodeLabels: {foo.k8s.io/x: h}\n", []string{"nodeLabels[foo.k8s.io/x]", "reserved for Kubernetes"}},
		{"bad node IP", "nodeIP: 10.0.0\n", []string{"nodeIP", `"10.0.0"`, "IPv4 or IPv6"}},
		{"bad quantity", "kubeReserved: {memory: lots}\n", []string{"kubeReserved[memory]", `"lots"`, "quantity"}},
		{"unsupported resource", "systemReserved: {gpu: '1'}\n", []string{"systemReserved[gpu]", `"gpu"`, `"ephemeral-storage"`}},
		{"non-positive lease", "nodeLeaseDurationSeconds: 0\n", []string{"nodeLeaseDurationSeconds", "0", "positive"}},
		{"relative lock file", "lockFile: plinthd.lock\n", []string{"lockFile", `"plinthd.lock"`, "absolute"}},
		{"bad healthz address", "healthzBindAddress: localhost\n", []string{"healthzBindAddress", `"localhost"`, "host:port"}},
		{"relative static pod path", "staticPodPath: manifests\n", []string{"staticPodPath", `"manifests"`, "absolute"}},
		{"tiny file check frequency", "fileCheckFrequency: 1ms\n", []string{"fileCheckFrequency", `"1ms"`, "at least 100ms"}},
		{"top-level list", "- maxPods: 3\n", []string{"top level must be a mapping", "a list"}},
		{"duplicate key", "maxPods: 3\nmaxPods: 4\n", []string{`"maxPods" already set`}},
		{"second document", "maxPods: 3\n---\nmaxPods: 4\n", []string{"document 2", "one YAML document"}},
		{"syntax error", "maxPods: [\n", []string{"yaml"}},
		{"boolean map key", "nodeLabels: {on: x}\n", []string{"nodeLabels", "read by YAML as the boolean true", "quote the key"}},
		{"number map key", "systemReserved: {010: x}\n", []string{"systemReserved", "read by YAML as the number 8"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"plinthd.d/50-test.yaml": tc.content})
			file := filepath.Join(dir, "plinthd.d/50-test.yaml")
			_, _, err := loadDir(t, dir)
			if err == nil {
				t.Fatalf("Load accepted %q", tc.content)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, file+": ") {
				t.Errorf("error %q does not start with the file name %s", msg, file)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestLoadReportsEveryBadFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "maxPods: -1\nnodeIP: nope\n",
		"plinthd.d/10.yaml": "bogus: true\n",
	})
	_, _, err := loadDir(t, dir)
	if err == nil {
		t.Fatal("Load succeeded")
	}
	for _, w := range []string{
		filepath.Join(dir, "plinthd.yaml") + ": maxPods: Invalid value: -1",
		filepath.Join(dir, "plinthd.yaml") + ": nodeIP: Invalid value: \"nope\"",
		filepath.Join(dir, "plinthd.d/10.yaml") + ": bogus: Forbidden: unknown field (set to true)",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	var fe *field.Error
	if !errors.As(err, &fe) {
		t.Errorf("errors.As(*field.Error) failed on %v", err)
	}
}

func TestLoadAcceptsFullExample(t *testing.T) {
	dir := writeFiles(t, map[string]string{"plinthd.yaml": `# every field, as an operator might write it
kubeconfig: /etc/plinth/kubeconfig
hostnameOverride: node-1.example.com
nodeIP: 2001:db8::10
registerNode: false
nodeLabels:
  node-role.kubernetes.io/worker: ""
  topology.kubernetes.io/zone: zone-a
  example.com/rack: r12
registerWithTaints:
- key: dedicated
  value: gpu
  effect: NoSchedule
nodeLeaseDurationSeconds: 60
nodeStatusUpdateFrequency: 15s
nodeStatusReportFrequency: 1m
healthzBindAddress: "[::1]:10248"
kubeAPIQPS: 20
kubeAPIBurst: 40
profilingAddress: "127.0.0.1:6060"
lockFile: /run/plinth/test.lock
stateDir: /srv/plinth
maxPods: 250
systemReserved: {cpu: 500m, memory: 1Gi, ephemeral-storage: 10Gi, pid: "1000"}
kubeReserved: {cpu: 100m, memory: 256Mi}
evictionHard:
  memory.available: 200Mi
  imagefs.available: 0%
evictionSoft:
  memory.available: 1Gi
  nodefs.available: 15%
evictionSoftGracePeriod:
  memory.available: 1m30s
  nodefs.available: 5m
evictionMinimumReclaim:
  memory.available: 100Mi
  nodefs.inodesFree: 1%
evictionPressureTransitionPeriod: 2m
evictionEvaluationInterval: 500ms
nodefsPath: /srv/plinth/pods
imagefsPath: /srv/images
podsCgroup: /plinth-pods
nodeAPIBindAddress: "127.0.0.1:10350"
tlsCertFile: /srv/plinth/serving.pem
podLogsDir: /srv/logs
minimumContainerTTLDuration: 30s
maximumDeadContainersPerContainer: 2
maximumDeadContainers: 100
imageGCHighThresholdPercent: 90
imageGCLowThresholdPercent: 70
imageMinimumGCAge: 5m
imageMaximumGCAge: 168h
staticPodPath: /srv/manifests
fileCheckFrequency: 1m
failSwapOn: false
memorySwap:
  swapBehavior: LimitedSwap
proxy:
  enabled: true
  nodePortAddresses: [192.0.2.0/24, "2001:db8::/64"]
  minSyncPeriod: 2s
  syncPeriod: 1m
  healthzBindAddress: 0.0.0.0:10257
  clusterCIDRs: [10.244.0.0/16]
  serviceCIDRs: [10.96.0.0/12, "fd00:96::/112"]
pods:
  enabled: false
  runcPath: /usr/local/sbin/runc
  seccompRoot: /etc/plinth/seccomp
  bridgeName: cni0
`})
	c, _ := mustLoadDir(t, dir)
	want := Config{
		Kubeconfig:               "/etc/plinth/kubeconfig",
		HostnameOverride:         "node-1.example.com",
		NodeIP:                   "2001:db8::10",
		RegisterNode:             false,
		NodeLabels:               map[string]string{"node-role.kubernetes.io/worker": "", "topology.kubernetes.io/zone": "zone-a", "example.com/rack": "r12"},
		RegisterWithTaints:       []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
		NodeLeaseDurationSeconds: 60,
		HealthzBindAddress:       "[::1]:10248",
		LockFile:                 "/run/plinth/test.lock",
		StateDir:                 "/srv/plinth",
		MaxPods:                  250,
		KubeAPIQPS:               20,
		KubeAPIBurst:             40,
		ProfilingAddress:         "127.0.0.1:6060",
		SystemReserved:           map[string]string{"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "10Gi", "pid": "1000"},
		KubeReserved:             map[string]string{"cpu": "100m", "memory": "256Mi"},
		// Merged key by key over the default hard thresholds.
		EvictionHard: map[string]string{"memory.available": "200Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
			"imagefs.available": "0%", "imagefs.inodesFree": "5%", "pid.available": "5%"},
		EvictionSoft: map[string]string{"memory.available": "1Gi", "nodefs.available": "15%"},
		EvictionSoftGracePeriod: map[string]metav1.Duration{"memory.available": {Duration: 90 * time.Second},
			"nodefs.available": {Duration: 5 * time.Minute}},
		EvictionMinimumReclaim:           map[string]string{"memory.available": "100Mi", "nodefs.inodesFree": "1%"},
		EvictionPressureTransitionPeriod: metav1.Duration{Duration: 2 * time.Minute},
		EvictionEvaluationInterval:       metav1.Duration{Duration: 500 * time.Millisecond},
		NodefsPath:                       "/srv/plinth/pods",
		ImagefsPath:                      "/srv/images",
		PodsCgroup:                       "/plinth-pods",
		NodeAPIBindAddress:               "127.0.0.1:10350",
		TLSCertFile:                      "/srv/plinth/serving.pem",
		PodLogsDir:                       "/srv/logs",

		MinimumContainerTTLDuration:       metav1.Duration{Duration: 30 * time.Second},
		MaximumDeadContainersPerContainer: 2,
		MaximumDeadContainers:             100,
		ImageGCHighThresholdPercent:       90,
		ImageGCLowThresholdPercent:        70,
		ImageMinimumGCAge:                 metav1.Duration{Duration: 5 * time.Minute},
		ImageMaximumGCAge:                 metav1.Duration{Duration: 168 * time.Hour},

		StaticPodPath:      "/srv/manifests",
		FileCheckFrequency: metav1.Duration{Duration: time.Minute},
		FailSwapOn:         false,
		MemorySwap:         MemorySwapConfig{SwapBehavior: LimitedSwap},
		Proxy: ProxyConfig{
			Enabled:            ptrTo(true),
			NodePortAddresses:  []string{"192.0.2.0/24", "2001:db8::/64"},
			MinSyncPeriod:      metav1.Duration{Duration: 2 * time.Second},
			SyncPeriod:         metav1.Duration{Duration: time.Minute},
			HealthzBindAddress: "0.0.0.0:10257",
			ClusterCIDRs:       []string{"10.244.0.0/16"},
			ServiceCIDRs:       []string{"10.96.0.0/12", "fd00:96::/112"},
		},
		Pods: defaultPodsConfig(),
	}
	want.Pods.Enabled = ptrTo(false)
	want.Pods.RuncPath = "/usr/local/sbin/runc"
	want.Pods.SeccompRoot = "/etc/plinth/seccomp"
	want.Pods.BridgeName = "cni0"
	want.NodeStatusUpdateFrequency.Duration = 15 * time.Second
	want.NodeStatusReportFrequency.Duration = time.Minute
	if !reflect.DeepEqual(c, want) {
		t.Errorf("config =\n%+v\nwant\n%+v", c, want)
	}
}

func TestEmptyAndCommentOnlyFilesChangeNothing(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "",
		"plinthd.d/10.yaml": "# nothing here\n",
		"plinthd.d/20.yaml": "null\n",
		"plinthd.d/30.yaml": "---\n",
	})
	c, files := mustLoadDir(t, dir)
	if !reflect.DeepEqual(c, Defaults()) || len(files) != 4 {
		t.Errorf("config = %+v from %v, want defaults from 4 files", c, files)
	}
}

func TestPodsSectionDefaultsAndErrors(t *testing.T) {
	c := Defaults()
	if c.PodsEnabled() {
		t.Error("pods enabled without a kubeconfig")
	}
	c.Kubeconfig = "/etc/plinth/kubeconfig"
	if !c.PodsEnabled() || c.PodsDir() != "/var/lib/plinth/pods" || c.SeccompRoot() != "/var/lib/plinth/seccomp" ||
		c.ImagesDir() != "/var/lib/plinth/images" || c.CheckpointsDir() != "/var/lib/plinth/checkpoints" {
		t.Errorf("defaults: enabled %v, pods %s, seccomp %s, images %s, checkpoints %s",
			c.PodsEnabled(), c.PodsDir(), c.SeccompRoot(), c.ImagesDir(), c.CheckpointsDir())
	}
	c.Pods.RuntimeDir = "run"
	c.Pods.BridgeName = "a-bridge-name-too-long"
	errs := c.Pods.validate(field.NewPath("pods")).ToAggregate().Error()
	for _, want := range []string{`pods.runtimeDir: Invalid value: "run": must be an absolute path`, `pods.bridgeName: Invalid value: "a-bridge-name-too-long"`} {
		if !strings.Contains(errs, want) {
			t.Errorf("errors %q lack %q", errs, want)
		}
	}
}

func TestStaticPodPathDropIns(t *testing.T) {
	// A drop-in may turn static pods off with an empty path, and a later null brings the
	// default back, while another drop-in changes only the frequency.
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "staticPodPath: /srv/manifests\n",
		"plinthd.d/10.yaml": "staticPodPath: ''\nfileCheckFrequency: 5s\n",
	})
	c, _ := mustLoadDir(t, dir)
	if c.StaticPodPath != "" || c.FileCheckFrequency.Duration != 5*time.Second {
		t.Errorf("staticPodPath %q fileCheckFrequency %v, want empty and 5s", c.StaticPodPath, c.FileCheckFrequency.Duration)
	}
	dir = writeFiles(t, map[string]string{
		"plinthd.yaml":      "staticPodPath: /srv/manifests\n",
		"plinthd.d/10.yaml": "staticPodPath: null\n",
	})
	c, _ = mustLoadDir(t, dir)
	if c.StaticPodPath != DefaultStaticPodPath || c.FileCheckFrequency.Duration != 20*time.Second {
		t.Errorf("staticPodPath %q fileCheckFrequency %v, want the defaults %q and 20s", c.StaticPodPath, c.FileCheckFrequency.Duration, DefaultStaticPodPath)
	}
}
