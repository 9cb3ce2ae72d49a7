package registry

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/control/apiserver"
)

// DefaultEventTTL is how long an event lives, kube-apiserver's --event-ttl.
const DefaultEventTTL = time.Hour

// Limits Kubernetes puts on events of the events.k8s.io shape (eventTime set).
const (
	eventReasonLimit            = 128
	eventReportingInstanceLimit = 128
	eventActionLimit            = 128
	eventNoteLimit              = 1024
)

// Events is core/v1 events, namespaced, each dropped by storage ttl after it was
// created (0 means DefaultEventTTL).
func Events(ttl time.Duration) *apiserver.Resource {
	if ttl <= 0 {
		ttl = DefaultEventTTL
	}
	return &apiserver.Resource{
		GroupVersion: schema.GroupVersion{Version: "v1"},
		Plural:       "events", Kind: "Event", Namespaced: true, ShortNames: []string{"ev"},
		New:      func() runtime.Object { return &corev1.Event{} },
		Validate: func(obj runtime.Object) field.ErrorList { return validateEvent(obj.(*corev1.Event)) },
		SelectableFields: func(obj runtime.Object) fields.Set {
			e := obj.(*corev1.Event)
			return fields.Set{
				"involvedObject.kind":            e.InvolvedObject.Kind,
				"involvedObject.namespace":       e.InvolvedObject.Namespace,
				"involvedObject.name":            e.InvolvedObject.Name,
				"involvedObject.uid":             string(e.InvolvedObject.UID),
				"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
				"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
				"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
				"reason":                         e.Reason,
				"reportingComponent":             e.ReportingController,
				"source":                         e.Source.Component,
				"type":                           e.Type,
			}
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Last Seen", Type: "string", Description: "The time at which the most recent occurrence of this event was recorded."},
			{Name: "Type", Type: "string", Description: "Type of this event (Normal, Warning), new types could be added in the future"},
			{Name: "Reason", Type: "string", Description: "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."},
			{Name: "Object", Type: "string", Description: "The object that this event is about."},
			{Name: "Subobject", Type: "string", Priority: 1, Description: "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]."},
			{Name: "Source", Type: "string", Priority: 1, Description: "The component reporting this event. Should be a short machine understandable string."},
			{Name: "Message", Type: "string", Description: "A human-readable description of the status of this operation."},
			{Name: "First Seen", Type: "string", Priority: 1, Description: "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"},
			{Name: "Count", Type: "string", Priority: 1, Description: "The number of times this event has occurred."},
			{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: "Name must be unique within a namespace."},
		},
		Row:   func(obj runtime.Object, now time.Time) []any { return eventRow(obj.(*corev1.Event), now) },
		Hooks: apiserver.Hooks{TTL: func(runtime.Object) time.Duration { return ttl }},
	}
}

func since(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// eventRow is kubectl's event line: when it was last and first seen (from the series
// for events.k8s.io-style events), what it is about and who reported it.
func eventRow(e *corev1.Event, now time.Time) []any {
	first := since(e.FirstTimestamp.Time, now)
	if e.FirstTimestamp.IsZero() {
		first = since(e.EventTime.Time, now)
	}
	last := since(e.LastTimestamp.Time, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	switch {
	case e.Series != nil:
		last = since(e.Series.LastObservedTime.Time, now)
		count = e.Series.Count
	case count == 0:
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	return []any{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, eventSource(e),
		strings.TrimSpace(e.Message), first, fmt.Sprint(count), e.Name}
}

func eventSource(e *corev1.Event) string {
	component, host := e.Source.Component, e.Source.Host
	if component == "" {
		component, host = e.ReportingController, e.ReportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}

// validateEvent follows Kubernetes' rules for core/v1 events: the event lives in its
// object's namespace (events about cluster-scoped objects in default, or kube-system
// for the new shape), and events with eventTime carry who reported what.
func validateEvent(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	involvedNS := field.NewPath("involvedObject", "namespace")
	notMatching := "does not match event.namespace"
	if e.EventTime.IsZero() {
		switch {
		case e.InvolvedObject.Namespace == "" && e.Namespace != "" && e.Namespace != metav1.NamespaceDefault:
			errs = append(errs, field.Invalid(involvedNS, e.InvolvedObject.Namespace, notMatching))
		case e.InvolvedObject.Namespace != "" && e.Namespace != e.InvolvedObject.Namespace:
			errs = append(errs, field.Invalid(involvedNS, e.InvolvedObject.Namespace, notMatching))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(involvedNS, e.InvolvedObject.Namespace, notMatching))
		}
		if e.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath("reportingComponent"), ""))
		} else {
			for _, msg := range validation.IsQualifiedName(e.ReportingController) {
				errs = append(errs, field.Invalid(field.NewPath("reportingComponent"), e.ReportingController, msg))
			}
		}
		required := []struct {
			name, value string
			limit       int
		}{{"reportingInstance", e.ReportingInstance, eventReportingInstanceLimit}, {"action", e.Action, eventActionLimit}, {"reason", e.Reason, eventReasonLimit}}
		for _, r := range required {
			switch {
			case r.value == "":
				errs = append(errs, field.Required(field.NewPath(r.name), ""))
			case len(r.value) > r.limit:
				errs = append(errs, field.Invalid(field.NewPath(r.name), "", fmt.Sprintf("can have at most %d characters", r.limit)))
			}
		}
		if len(e.Message) > eventNoteLimit {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %d characters", eventNoteLimit)))
		}
	}
	if t := e.Type; t != "" && t != corev1.EventTypeNormal && t != corev1.EventTypeWarning && !e.EventTime.IsZero() {
		errs = append(errs, field.NotSupported(field.NewPath("type"), t, []string{corev1.EventTypeNormal, corev1.EventTypeWarning}))
	}
	return errs
}
