package admission

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestAdmitInOrder(t *testing.T) {
	t1 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	mk := func(name string, created time.Time, cpu string) *corev1.Pod {
		p := podWith(ctr("c", list("cpu", cpu), nil))
		p.Name, p.UID = name, types.UID("uid-"+name)
		p.CreationTimestamp = metav1.NewTime(created)
		return p
	}
	running := mk("running", t1.Add(-time.Hour), "500m")
	// Two new pods each fit alone, not together: the older one wins even though it is
	// listed second; "big" never fits; "a" and "b" tie on time, so "a" goes first and
	// takes the last pod slot.
	newer := mk("newer", t1.Add(time.Minute), "400m")
	older := mk("older", t1, "400m")
	big := mk("big", t1.Add(2*time.Minute), "2")
	tieB := mk("b", t1.Add(3*time.Minute), "0")
	tieA := mk("a", t1.Add(3*time.Minute), "0")
	candidates := []*corev1.Pod{newer, older, big, tieB, tieA}
	admitted := []*corev1.Pod{running}

	base := Input{Node: node("n1", list("cpu", "1", "pods", "3"))}
	accepted, refused := New().AdmitInOrder(base, admitted, candidates)

	var names []string
	for _, p := range accepted {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, " "); got != "older a" {
		t.Errorf("accepted %q, want %q", got, "older a")
	}
	var why []string
	for _, r := range refused {
		why = append(why, r.Pod.Name+"="+r.Result.Reason)
	}
	if got, want := strings.Join(why, " "), "newer=OutOfcpu big=OutOfcpu b=OutOfpods"; got != want {
		t.Errorf("refused %q, want %q", got, want)
	}
	if len(admitted) != 1 || candidates[0] != newer {
		t.Errorf("inputs changed: admitted %d, candidates[0] %s", len(admitted), candidates[0].Name)
	}
}
