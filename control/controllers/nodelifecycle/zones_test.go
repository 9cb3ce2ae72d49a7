package nodelifecycle

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestZoneState(t *testing.T) {
	for _, tc := range []struct {
		ready, notReady int
		want            zoneState
	}{
		{0, 0, zoneNormal},
		{5, 0, zoneNormal},
		{0, 1, zoneFullDisruption},
		{0, 7, zoneFullDisruption},
		{1, 2, zoneNormal},              // 67% but only two down
		{2, 3, zonePartialDisruption},   // 60%
		{45, 55, zonePartialDisruption}, // exactly the threshold
		{46, 54, zoneNormal},            // just under it
	} {
		got := zoneCount{ready: tc.ready, notReady: tc.notReady}.state(0.55)
		if got != tc.want {
			t.Errorf("ready %d, not ready %d: %v, want %v", tc.ready, tc.notReady, got, tc.want)
		}
	}
}

func TestZoneRate(t *testing.T) {
	opts := DefaultOptions()
	for _, tc := range []struct {
		state zoneState
		size  int
		want  float64
	}{
		{zoneNormal, 3, 0.1},
		{zoneFullDisruption, 3, 0.1},
		{zonePartialDisruption, 50, 0},
		{zonePartialDisruption, 51, 0.01},
	} {
		if got := zoneRate(tc.state, tc.size, opts); got != tc.want {
			t.Errorf("%v with %d nodes: rate %v, want %v", tc.state, tc.size, got, tc.want)
		}
	}
}

func TestZoneKey(t *testing.T) {
	node := func(l map[string]string) *v1.Node { return &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: l}} }
	for _, tc := range []struct {
		labels     map[string]string
		key, label string
	}{
		{nil, "", ""},
		{map[string]string{v1.LabelTopologyRegion: "eu", v1.LabelTopologyZone: "a"}, "eu:\x00:a", "eu:a"},
		{map[string]string{v1.LabelTopologyZone: "a"}, ":\x00:a", ":a"},
		{map[string]string{v1.LabelTopologyRegion: "eu"}, "eu:\x00:", "eu:"},
	} {
		key := zoneKey(node(tc.labels))
		if key != tc.key || zoneLabel(key) != tc.label {
			t.Errorf("labels %v: key %q label %q, want %q %q", tc.labels, key, zoneLabel(key), tc.key, tc.label)
		}
	}
	// Region and zone cannot be confused by a separator inside a value.
	a := zoneKey(node(map[string]string{v1.LabelTopologyRegion: "a:b", v1.LabelTopologyZone: "c"}))
	b := zoneKey(node(map[string]string{v1.LabelTopologyRegion: "a", v1.LabelTopologyZone: "b:c"}))
	if a == b {
		t.Errorf("different region/zone pairs share the key %q", a)
	}
}
