package endpointslice

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// store stands in for the API in plan tests: it applies plans, naming created slices.
type store struct {
	t       *testing.T
	slices  map[string]*discoveryv1.EndpointSlice
	created int
}

func newStore(t *testing.T) *store {
	return &store{t: t, slices: map[string]*discoveryv1.EndpointSlice{}}
}

func (s *store) list() []*discoveryv1.EndpointSlice {
	return slices.Collect(maps.Values(s.slices))
}

func (s *store) apply(p slicePlan) {
	s.t.Helper()
	for _, c := range p.creates {
		s.created++
		c = c.DeepCopy()
		c.Name = fmt.Sprintf("%s%03d", c.GenerateName, s.created)
		c.UID = types.UID("slice-" + c.Name)
		s.slices[c.Name] = c
	}
	for _, u := range p.updates {
		if _, ok := s.slices[u.Name]; !ok {
			s.t.Fatalf("update of unknown slice %s", u.Name)
		}
		s.slices[u.Name] = u.DeepCopy()
	}
	for _, d := range p.deletes {
		if _, ok := s.slices[d.Name]; !ok {
			s.t.Fatalf("delete of unknown slice %s", d.Name)
		}
		delete(s.slices, d.Name)
	}
}

// sync plans against the store, applies, checks the invariants, and returns the plan.
func (s *store) sync(svc *v1.Service, pods []*v1.Pod, maxPerSlice int) slicePlan {
	s.t.Helper()
	want := desiredEndpoints(svc, pods, oneZone)
	p := planSlices(svc, s.list(), want, maxPerSlice)
	s.apply(p)
	s.checkHolds(svc, want, maxPerSlice)
	if again := planSlices(svc, s.list(), want, maxPerSlice); !again.empty() {
		s.t.Fatalf("second plan over the same state is not empty: %d creates, %d updates, %d deletes",
			len(again.creates), len(again.updates), len(again.deletes))
	}
	return p
}

// checkHolds: every desired endpoint is in exactly one slice of its group, no slice is
// over the limit, and every slice is tied to the Service.
func (s *store) checkHolds(svc *v1.Service, want desiredState, maxPerSlice int) {
	s.t.Helper()
	seen := map[groupKey]map[string]int{}
	for _, sl := range s.slices {
		if len(sl.Endpoints) > maxPerSlice {
			s.t.Fatalf("slice %s holds %d endpoints, over %d", sl.Name, len(sl.Endpoints), maxPerSlice)
		}
		if sl.Labels[discoveryv1.LabelServiceName] != svc.Name || sl.Labels[discoveryv1.LabelManagedBy] != ManagedBy {
			s.t.Fatalf("slice %s labels %v", sl.Name, sl.Labels)
		}
		if len(sl.OwnerReferences) != 1 || sl.OwnerReferences[0].UID != svc.UID || !*sl.OwnerReferences[0].Controller {
			s.t.Fatalf("slice %s owner references %+v", sl.Name, sl.OwnerReferences)
		}
		gk := groupKey{sl.AddressType, portsKey(sl.Ports)}
		if seen[gk] == nil {
			seen[gk] = map[string]int{}
		}
		for _, ep := range sl.Endpoints {
			seen[gk][ep.Addresses[0]]++
		}
	}
	for gk, g := range want.groups {
		for addr := range g.endpoints {
			if seen[gk][addr] != 1 {
				s.t.Fatalf("%s is in %d slices of its group, want 1", addr, seen[gk][addr])
			}
		}
	}
	if want.endpointCount() != sumCounts(seen) {
		s.t.Fatalf("slices hold %d endpoints, want %d", sumCounts(seen), want.endpointCount())
	}
}

func sumCounts(m map[groupKey]map[string]int) int {
	n := 0
	for _, g := range m {
		for _, c := range g {
			n += c
		}
	}
	return n
}

func pods(n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = pod(fmt.Sprintf("p%04d", i), fmt.Sprintf("10.1.%d.%d", i/250, i%250+1))
	}
	return out
}

func sizes(st *store) []int {
	var out []int
	for _, s := range st.slices {
		out = append(out, len(s.Endpoints))
	}
	slices.Sort(out)
	return out
}

func webService() *v1.Service {
	return service("web", svcPort("http", 80, intstr.FromInt32(8080)))
}

func TestPlanNewServiceFillsSlicesOfAtMost100(t *testing.T) {
	st := newStore(t)
	p := st.sync(webService(), pods(250), 100)
	if len(p.creates) != 3 || len(p.updates)+len(p.deletes) != 0 {
		t.Fatalf("plan: %d creates, %d updates, %d deletes; want 3 creates", len(p.creates), len(p.updates), len(p.deletes))
	}
	if got := sizes(st); !slices.Equal(got, []int{50, 100, 100}) {
		t.Fatalf("slice sizes %v", got)
	}
	for _, s := range st.slices {
		if s.GenerateName != "web-" || s.AddressType != discoveryv1.AddressTypeIPv4 || len(s.Ports) != 1 || *s.Ports[0].Port != 8080 || *s.Ports[0].Name != "http" {
			t.Fatalf("slice %s: %+v", s.Name, s)
		}
	}
}

func TestPlanTouchesOnlyTheSliceOfAChangedPod(t *testing.T) {
	st := newStore(t)
	ps := pods(250)
	st.sync(webService(), ps, 100)
	ps[137].Status.Conditions[0].Status = v1.ConditionFalse
	p := st.sync(webService(), ps, 100)
	if len(p.updates) != 1 || len(p.creates)+len(p.deletes) != 0 {
		t.Fatalf("plan: %d creates, %d updates, %d deletes; want 1 update", len(p.creates), len(p.updates), len(p.deletes))
	}
	found := false
	for _, ep := range p.updates[0].Endpoints {
		if ep.TargetRef.Name == ps[137].Name {
			found = !*ep.Conditions.Ready
		}
	}
	if !found {
		t.Fatal("the updated slice does not hold the pod as not ready")
	}
}

func TestPlanReplacesARemovedEndpointInPlace(t *testing.T) {
	st := newStore(t)
	ps := pods(250)
	st.sync(webService(), ps, 100)
	ps = append(slices.Delete(ps, 10, 11), pod("new", "10.9.9.9"))
	p := st.sync(webService(), ps, 100)
	if len(p.updates) != 1 || len(p.creates)+len(p.deletes) != 0 {
		t.Fatalf("plan: %d creates, %d updates, %d deletes; want 1 update", len(p.creates), len(p.updates), len(p.deletes))
	}
}

func TestPlanPutsNewEndpointsIntoTheFullestSliceThatTakesThemAll(t *testing.T) {
	st := newStore(t)
	ps := pods(250)
	st.sync(webService(), ps, 100)
	more := pods(260)[250:]
	p := st.sync(webService(), append(ps, more...), 100)
	if len(p.updates) != 1 || len(p.creates)+len(p.deletes) != 0 || len(p.updates[0].Endpoints) != 60 {
		t.Fatalf("plan: %d creates, %d updates, %d deletes; want one update of the 50-slice to 60", len(p.creates), len(p.updates), len(p.deletes))
	}
	// 60 more do not fit anywhere: one new slice, nothing else written.
	p = st.sync(webService(), pods(320), 100)
	if len(p.creates) != 1 || len(p.updates)+len(p.deletes) != 0 || len(p.creates[0].Endpoints) != 60 {
		t.Fatalf("plan: %d creates, %d updates, %d deletes; want one create of 60", len(p.creates), len(p.updates), len(p.deletes))
	}
}

func TestPlanKeepsOnePlaceholderWithoutEndpoints(t *testing.T) {
	st := newStore(t)
	p := st.sync(webService(), nil, 100)
	if len(p.creates) != 1 || len(p.creates[0].Endpoints) != 0 || len(p.creates[0].Ports) != 0 {
		t.Fatalf("want one empty placeholder slice, got %+v", p)
	}
	st.sync(webService(), pods(150), 100)
	if got := sizes(st); !slices.Equal(got, []int{50, 100}) {
		t.Fatalf("after pods came: sizes %v (the placeholder should have been reused)", got)
	}
	if st.created != 2 {
		t.Fatalf("%d slices created in all, want 2: the placeholder is reused for the first 100", st.created)
	}
	p = st.sync(webService(), nil, 100)
	if len(st.slices) != 1 || len(p.updates) != 1 || len(p.deletes) != 1 || len(p.creates) != 0 {
		t.Fatalf("when the pods went: %d slices; plan %d creates, %d updates, %d deletes", len(st.slices), len(p.creates), len(p.updates), len(p.deletes))
	}
}

func TestPlanReusesSlicesWhenPortsChange(t *testing.T) {
	st := newStore(t)
	ps := pods(150)
	st.sync(webService(), ps, 100)
	svc := service("web", svcPort("http", 80, intstr.FromInt32(9000)))
	p := st.sync(svc, ps, 100)
	if len(p.updates) != 2 || len(p.creates)+len(p.deletes) != 0 {
		t.Fatalf("plan: %d creates, %d updates, %d deletes; want 2 updates", len(p.creates), len(p.updates), len(p.deletes))
	}
	for _, s := range st.slices {
		if *s.Ports[0].Port != 9000 {
			t.Fatalf("slice %s still on port %d", s.Name, *s.Ports[0].Port)
		}
	}
}

func TestPlanDeletesSlicesOfAnEarlierServiceOfTheSameName(t *testing.T) {
	st := newStore(t)
	ps := pods(3)
	st.sync(webService(), ps, 100)
	again := webService()
	again.UID = "svc-web-2"
	p := st.sync(again, ps, 100)
	if len(p.creates) != 1 || len(p.deletes) != 1 || len(p.updates) != 0 {
		t.Fatalf("plan: %d creates, %d updates, %d deletes; want the old slice deleted, a new one created", len(p.creates), len(p.updates), len(p.deletes))
	}
}

func TestPlanFollowsServiceLabelsAndHeadless(t *testing.T) {
	st := newStore(t)
	ps := pods(3)
	st.sync(webService(), ps, 100)
	svc := webService()
	svc.Labels = map[string]string{"tier": "front", discoveryv1.LabelManagedBy: "someone"}
	svc.Spec.ClusterIP = v1.ClusterIPNone
	p := st.sync(svc, ps, 100)
	if len(p.updates) != 1 {
		t.Fatalf("want 1 update, got %+v", p)
	}
	l := p.updates[0].Labels
	if l["tier"] != "front" || l[discoveryv1.LabelManagedBy] != ManagedBy || l[labelHeadless] != "" {
		t.Fatalf("labels %v", l)
	}
	if _, ok := l[labelHeadless]; !ok {
		t.Fatalf("headless label missing: %v", l)
	}
}

func TestPlanRepairsDuplicatesAndOverfullSlices(t *testing.T) {
	st := newStore(t)
	ps := pods(150)
	st.sync(webService(), ps, 1000) // one slice of 150
	// Someone copied an endpoint into a second slice of the same group.
	var only *discoveryv1.EndpointSlice
	for _, s := range st.slices {
		only = s
	}
	dup := only.DeepCopy()
	dup.Name, dup.UID, dup.Endpoints = "web-dup", "slice-dup", dup.Endpoints[:1]
	st.slices[dup.Name] = dup
	st.sync(webService(), ps, 100)
	if got := sizes(st); !slices.Equal(got, []int{50, 100}) {
		t.Fatalf("sizes %v, want [50 100]", got)
	}
}
