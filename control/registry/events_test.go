package registry

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEventValidation(t *testing.T) {
	now := metav1.NewMicroTime(time.Now())
	for _, tc := range []struct {
		name  string
		ev    corev1.Event
		field string // "" means valid
	}{
		{"pod event in its namespace", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "web"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "web"}}, ""},
		{"pod event elsewhere", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "other"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "web"}}, "involvedObject.namespace"},
		{"node event in default", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, InvolvedObject: corev1.ObjectReference{Kind: "Node"}}, ""},
		{"node event in kube-system", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system"}, InvolvedObject: corev1.ObjectReference{Kind: "Node"}}, "involvedObject.namespace"},
		{"new-style event without reporter", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, EventTime: now, Action: "Bind", Reason: "Scheduled", ReportingInstance: "s-1"}, "reportingComponent"},
		{"new-style event without action", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, EventTime: now, ReportingController: "plinth.dev/scheduler", Reason: "Scheduled", ReportingInstance: "s-1"}, "action"},
		{"new-style event complete", corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system"}, EventTime: now, Action: "Bind", ReportingController: "plinth.dev/scheduler", Reason: "Scheduled", ReportingInstance: "s-1", Type: "Normal"}, ""},
	} {
		errs := validateEvent(&tc.ev)
		switch {
		case tc.field == "" && len(errs) > 0:
			t.Errorf("%s: refused: %v", tc.name, errs)
		case tc.field != "" && !hasField(errs, tc.field):
			t.Errorf("%s: errors on %v, want one on %s", tc.name, fieldsOf(errs), tc.field)
		}
	}
}

func TestEventRowAndTTL(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.17"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", FieldPath: "spec.containers{app}"},
		Type:           "Warning", Reason: "BackOff", Message: " Back-off restarting failed container \n",
		Source:         corev1.EventSource{Component: "plinthd", Host: "n1"},
		FirstTimestamp: metav1.NewTime(now.Add(-time.Hour)), LastTimestamp: metav1.NewTime(now.Add(-30 * time.Second)), Count: 12,
	}
	r := Events(0)
	row := r.Row(ev, now)
	if len(row) != len(r.Columns) {
		t.Fatalf("%d cells for %d columns", len(row), len(r.Columns))
	}
	want := []any{"30s", "Warning", "BackOff", "pod/web", "spec.containers{app}", "plinthd, n1", "Back-off restarting failed container", "60m", "12", "web.17"}
	for i := range want {
		if row[i] != want[i] {
			t.Fatalf("row %q, want %q", row, want)
		}
	}
	// The events.k8s.io shape: eventTime and a series.
	series := &corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "Node"}, EventTime: metav1.NewMicroTime(now.Add(-5 * time.Minute)),
		Series:              &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-time.Minute))},
		ReportingController: "plinth.dev/nodelifecycle", ReportingInstance: "control-1",
	}
	row = r.Row(series, now)
	if row[0] != "60s" || row[3] != "node" || row[5] != "plinth.dev/nodelifecycle, control-1" || row[7] != "5m" || row[8] != "3" {
		t.Fatalf("series row %q", row)
	}
	if got := r.TTL(ev); got != DefaultEventTTL {
		t.Fatalf("TTL %s, want %s", got, DefaultEventTTL)
	}
	if got := Events(5 * time.Minute).TTL(ev); got != 5*time.Minute {
		t.Fatalf("TTL %s, want 5m", got)
	}
	fs := r.SelectableFields(ev)
	if fs["involvedObject.name"] != "web" || fs["source"] != "plinthd" || fs["type"] != "Warning" || fs["reason"] != "BackOff" {
		t.Fatalf("selectable fields %v", fs)
	}
}
