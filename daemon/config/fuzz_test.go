package config

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plinth/plinth/daemon/pressure"
)

// configSeeds are YAML documents, valid and not, that start the fuzzers.
var configSeeds = []string{
	"",
	"null\n",
	"maxPods: 50\n",
	"maxPods: null\nregisterNode: ~\n",
	"kubeconfig: /etc/plinth/kubeconfig\nnodeIP: 192.0.2.1\nregisterNode: false\n",
	"nodeLabels: {a: '1', topology.kubernetes.io/zone: z, node-role.kubernetes.io/worker: ''}\n",
	"nodeLabels: {a: null}\n",
	"nodeLabels: {on: x}\n",
	"nodeLabels: {kubernetes.io/hostname: h}\n",
	"registerWithTaints: [{key: a, value: b, effect: NoSchedule}, {key: c, effect: NoExecute}]\n",
	"registerWithTaints: []\n",
	"registerWithTaints: [null]\n",
	"registerWithTaints: [{key: a, efect: NoSchedule}]\n",
	"nodeStatusUpdateFrequency: 1m30s\nnodeStatusReportFrequency: 10\n",
	"nodeLeaseDurationSeconds: 99999999999\n",
	"healthzBindAddress: '[::1]:10248'\n",
	"systemReserved: {cpu: 100m, memory: 256Mi, pid: '1000'}\nkubeReserved: {ephemeral-storage: 1Gi}\n",
	"systemReserved: {gpu: '1'}\n",
	"lockFile: /run/x.lock\nstateDir: /srv/plinth\nmaxPods: 1\n",
	"- a\n- b\n",
	"a: 1\n---\nb: 2\n",
	"maxPods: 1\nmaxPods: 2\n",
	"MaxPods: 3\n",
	"{\"maxPods\": 7, \"nodeLabels\": {\"x\": \"y\"}}",
	"hostnameOverride: &a node-1\nkubeconfig: *a\n",
	"nodeLabels: !!map {a: b}\n",
	"evictionHard: {memory.available: 200Mi, nodefs.available: '12.5%', imagefs.available: 0%}\n",
	"evictionHard: {memory.available: null}\n",
	"evictionHard: {memory.free: 1Gi}\nevictionMinimumReclaim: {nodefs.available: 101%}\n",
	"evictionSoft: {memory.available: 1Gi}\nevictionSoftGracePeriod: {memory.available: 1m30s}\n",
	"evictionSoft: {memory.available: 1Gi}\n",
	"evictionSoftGracePeriod: {pid.available: 10s}\n",
	"evictionSoftGracePeriod: {memory.available: -1s}\n",
	"evictionSoftGracePeriod: {memory.available: 90}\n",
	"evictionMinimumReclaim: {memory.available: 0.5Gi, nodefs.inodesFree: 1%}\n",
	"evictionPressureTransitionPeriod: 0s\nevictionEvaluationInterval: 250ms\n",
	"evictionEvaluationInterval: 1ms\n",
	"nodefsPath: /srv/pods\nimagefsPath: images\n",
	"staticPodPath: /srv/manifests\nfileCheckFrequency: 20s\n",
	"staticPodPath: ''\nfileCheckFrequency: 0s\n",
	"staticPodPath: null\nfileCheckFrequency: 20\n",
	"kubeconfig: /k\nproxy: {enabled: true, nodePortAddresses: [192.0.2.0/24, '::/0'], minSyncPeriod: 2s, syncPeriod: 1m}\n",
	"proxy: {enabled: null, nodePortAddresses: [primary], healthzBindAddress: ''}\n",
	"proxy: {nodePortAddresses: [primary, 10.0.0.0/8]}\n",
	"proxy: {nodePortAddresses: [127.0.0.1/32]}\n",
	"proxy: {clusterCIDRs: [10.244.0.0/16], serviceCIDRs: [10.96.0.0/12, 'fd00::/108']}\n",
	"proxy: {minSyncPeriod: 1m, syncPeriod: 1s}\n",
	"proxy: {enabled: true}\n",
	"proxy: {Enabled: yes}\n",
	"proxy: [a]\n",
	"minimumContainerTTLDuration: 1m\nmaximumDeadContainersPerContainer: 2\nmaximumDeadContainers: 240\n",
	"maximumDeadContainersPerContainer: -1\nmaximumDeadContainers: -2\nminimumContainerTTLDuration: -1s\n",
	"imageGCHighThresholdPercent: 100\nimageGCLowThresholdPercent: 0\n",
	"imageGCHighThresholdPercent: 101\nimageGCLowThresholdPercent: 85.5\n",
	"imageGCLowThresholdPercent: 90\n",
	"imageMinimumGCAge: 10m\nimageMaximumGCAge: 5m\n",
	"imageMaximumGCAge: 720h\nimageMinimumGCAge: null\n",
}

// FuzzParseFile feeds arbitrary bytes to the file parser. Invariants: no panic; a
// document the parser accepts decodes over the defaults, passes every per-field rule,
// and survives a round trip through YAML unchanged. (Rules that compare two fields,
// such as a soft threshold needing its grace period, apply only to the merged
// configuration, since another file may supply the other half.)
func FuzzParseFile(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parseFile(configSchema, "fuzz.yaml", data)
		if err != nil {
			return
		}
		c, err := mergeDocuments(configSchema, [][]byte{doc})
		if err != nil {
			t.Fatalf("accepted document %s does not decode: %v", doc, err)
		}
		if errs := c.validate(); len(errs) > 0 {
			t.Fatalf("accepted document %s gives an invalid config: %v", doc, errs.ToAggregate())
		}
		checkAcrossFields(t, c)
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("marshal %+v: %v", c, err)
		}
		doc2, err := parseFile(configSchema, "roundtrip.yaml", out)
		if err != nil {
			t.Fatalf("marshalled config does not parse back: %v\n%s", err, out)
		}
		c2, err := mergeDocuments(configSchema, [][]byte{doc2})
		if err != nil {
			t.Fatalf("marshalled config does not decode back: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip changed the config:\n%+v\n%+v\nvia\n%s", c, c2, out)
		}
	})
}

// FuzzMergeFiles merges two documents. Invariants: no panic; two documents that are
// each accepted merge into a config that passes every per-field rule; what the second
// sets wins: its scalars and lists replace the first's, and its map entries are all
// present.
func FuzzMergeFiles(f *testing.F) {
	for i, a := range configSeeds {
		f.Add([]byte(a), []byte(configSeeds[(i+7)%len(configSeeds)]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		docA, err := parseFile(configSchema, "a.yaml", a)
		if err != nil {
			return
		}
		docB, err := parseFile(configSchema, "b.yaml", b)
		if err != nil {
			return
		}
		merged, err := mergeDocuments(configSchema, [][]byte{docA, docB})
		if err != nil {
			t.Fatalf("merging accepted documents failed: %v\n%s\n%s", err, docA, docB)
		}
		if errs := merged.validate(); len(errs) > 0 {
			t.Fatalf("merging valid documents gave an invalid config: %v\n%s\n%s", errs.ToAggregate(), docA, docB)
		}
		checkAcrossFields(t, merged)
		onlyB, err := mergeDocuments(configSchema, [][]byte{docB})
		if err != nil {
			t.Fatalf("decoding accepted document: %v", err)
		}
		var setByB map[string]any
		if err := json.Unmarshal(docB, &setByB); err != nil {
			t.Fatalf("document %s is not a JSON object: %v", docB, err)
		}
		got, want := asJSONObject(t, merged), asJSONObject(t, onlyB)
		for k, v := range setByB {
			switch v := v.(type) {
			case nil:
				// b reset the field: neither a's value nor b's, so no claim here
				// beyond validity, which was checked above.
			case map[string]any:
				gotMap, _ := got[k].(map[string]any)
				isStruct := configFields[k] != nil && configFields[k].Kind() == reflect.Struct
				for mk, mv := range v {
					if mv == nil && isStruct {
						// A section's field set to null is reset to its default,
						// which is what b alone gives too.
						if !reflect.DeepEqual(gotMap[mk], want[k].(map[string]any)[mk]) {
							t.Fatalf("%s.%s = %v after b reset it, want the default %v", k, mk, gotMap[mk], want[k].(map[string]any)[mk])
						}
						continue
					}
					if mv == nil {
						if _, present := gotMap[mk]; present {
							t.Fatalf("%s[%s]: b removed it but the merge kept %v", k, mk, gotMap[mk])
						}
						continue
					}
					if !reflect.DeepEqual(gotMap[mk], want[k].(map[string]any)[mk]) {
						t.Fatalf("%s[%s] = %v after merge, want b's %v", k, mk, gotMap[mk], mv)
					}
				}
			default:
				if !reflect.DeepEqual(got[k], want[k]) {
					t.Fatalf("%s = %v after merge, want b's %v", k, got[k], want[k])
				}
			}
		}
	})
}

// configFields are Config's fields by JSON name.
var configFields = jsonFields(reflect.TypeFor[Config]())

// checkAcrossFields checks that Validate of a config whose fields are each valid
// fails exactly when the cross-field rules do, and that a config it accepts gives the
// pressure manager a configuration it accepts.
func checkAcrossFields(t *testing.T, c Config) {
	t.Helper()
	across := c.validateAcrossFields()
	err := c.Validate()
	if (err == nil) != (len(across) == 0) {
		t.Fatalf("Validate() = %v but the cross-field rules say %v", err, across.ToAggregate())
	}
	if err != nil {
		return
	}
	pc, err := c.PressureConfig()
	if err != nil {
		t.Fatalf("valid config gives no pressure config: %v", err)
	}
	if _, err := pressure.NewManager(pc, pressure.Deps{Source: nopSource{}, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatalf("valid config gives a pressure config the manager refuses: %v", err)
	}
}

type nopSource struct{}

func (nopSource) Observe(context.Context) (pressure.Observations, error) {
	return pressure.Observations{}, nil
}

func asJSONObject(t *testing.T, c Config) map[string]any {
	t.Helper()
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzFlagValues parses --node-labels and --register-with-taints values. Invariants:
// no panic; an accepted value prints (String) to a value that parses to the same
// result.
func FuzzFlagValues(f *testing.F) {
	f.Add("a=1,b=2", "k=v:NoSchedule,k2:NoExecute")
	f.Add("", "")
	f.Add(" a = 1 , b=", "k=:PreferNoSchedule")
	f.Add("a=b=c", "a:b=c:d:NoSchedule")
	f.Add("a=1,a=2", "k=v")
	f.Add(",", ",:NoSchedule")
	f.Fuzz(func(t *testing.T, labels, taints string) {
		if parsed, err := parseLabels(labels); err == nil {
			v := labelsValue{labels: parsed}
			again, err := parseLabels(v.String())
			if err != nil {
				t.Fatalf("labels %q printed as %q, which does not parse: %v", labels, v.String(), err)
			}
			if !maps.Equal(parsed, again) {
				t.Fatalf("labels %q -> %v -> %q -> %v", labels, parsed, v.String(), again)
			}
		}
		if parsed, err := parseTaints(taints); err == nil {
			v := taintsValue{taints: parsed}
			again, err := parseTaints(v.String())
			if err != nil {
				t.Fatalf("taints %q printed as %q, which does not parse: %v", taints, v.String(), err)
			}
			if !slices.Equal(parsed, again) {
				t.Fatalf("taints %q -> %v -> %q -> %v", taints, parsed, v.String(), again)
			}
		}
	})
}
