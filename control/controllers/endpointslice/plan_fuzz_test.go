package endpointslice

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// FuzzPlanSlices drives a Service through random pod changes, slice limits and port
// changes; after every sync the slices hold each endpoint exactly once, none is over
// the limit, and planning again writes nothing (store.sync checks all three).
func FuzzPlanSlices(f *testing.F) {
	f.Add([]byte{0x10, 0x20, 0x31, 0x42, 0x05, 0x16})
	f.Add([]byte{0xff, 0x00, 0xa5, 0x5a, 0x77, 0x88, 0x99, 0x13, 0x24})
	f.Add([]byte{0x03, 0x03, 0x03, 0xc1, 0xc1, 0x40, 0x40})
	f.Fuzz(runPlanOps)
}

// runPlanOps applies one fuzz input: each byte is an operation (its top three bits)
// with an argument (the low five).
func runPlanOps(t *testing.T, ops []byte) {
	if len(ops) > 64 {
		ops = ops[:64]
	}
	st := newStore(t)
	live := map[int]*v1.Pod{}
	target := int32(8080)
	maxPerSlice := 3
	for _, op := range ops {
		arg := int(op & 0x1f)
		switch op >> 5 {
		case 0, 1, 2: // add or replace pods arg..arg+op%4
			for i := arg; i <= arg+int(op%4); i++ {
				p := pod(fmt.Sprintf("p%02d", i), fmt.Sprintf("10.0.0.%d", i+1))
				// Odd pods name their port differently, so two groups exist.
				if i%2 == 1 {
					p.Spec.Containers[0].Ports[0].ContainerPort = 9090
				}
				live[i] = p
			}
		case 3, 4: // remove a pod
			delete(live, arg)
		case 5: // flip readiness
			if p, ok := live[arg]; ok {
				c := &p.Status.Conditions[0]
				c.Status = map[v1.ConditionStatus]v1.ConditionStatus{v1.ConditionTrue: v1.ConditionFalse, v1.ConditionFalse: v1.ConditionTrue}[c.Status]
			}
		case 6: // change the slice limit
			maxPerSlice = arg%7 + 1
		case 7: // move the Service between a named and a numeric targetPort
			target = []int32{8080, 8000, 8001}[arg%3] // 8080: the named port
		}
		svc := service("web", svcPort("http", 80, intstr.FromString("http")))
		if target != 8080 {
			svc = service("web", svcPort("http", 80, intstr.FromInt32(target)))
		}
		pods := make([]*v1.Pod, 0, len(live))
		for _, p := range live {
			pods = append(pods, p)
		}
		st.sync(svc, pods, maxPerSlice)
	}
}
