package pressure

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reasons and messages of the pressure conditions, in kubelet's shape with the Plinthd
// prefix. The False ones are those daemon/node's NoPressure reports, so a node's
// conditions read the same before and after the pressure manager starts.
const (
	ReasonInsufficientMemory  = "PlinthdHasInsufficientMemory"
	ReasonSufficientMemory    = "PlinthdHasSufficientMemory"
	MessageSufficientMemory   = "plinthd has sufficient memory available"
	ReasonDiskPressure        = "PlinthdHasDiskPressure"
	ReasonNoDiskPressure      = "PlinthdHasNoDiskPressure"
	MessageNoDiskPressure     = "plinthd has no disk pressure"
	ReasonInsufficientPID     = "PlinthdHasInsufficientPID"
	ReasonSufficientPID       = "PlinthdHasSufficientPID"
	MessageSufficientPID      = "plinthd has sufficient PID available"
	messageNotEvaluatedSuffix = " (not evaluated yet)"
)

type conditionText struct {
	trueReason, falseReason, falseMessage string
}

var conditionTexts = map[corev1.NodeConditionType]conditionText{
	corev1.NodeMemoryPressure: {ReasonInsufficientMemory, ReasonSufficientMemory, MessageSufficientMemory},
	corev1.NodeDiskPressure:   {ReasonDiskPressure, ReasonNoDiskPressure, MessageNoDiskPressure},
	corev1.NodePIDPressure:    {ReasonInsufficientPID, ReasonSufficientPID, MessageSufficientPID},
}

// initialConditions are reported before the first evaluation: no pressure.
func initialConditions() []corev1.NodeCondition {
	out := make([]corev1.NodeCondition, 0, len(pressureConditions))
	for _, t := range pressureConditions {
		txt := conditionTexts[t]
		out = append(out, corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse,
			Reason: txt.falseReason, Message: txt.falseMessage + messageNotEvaluatedSuffix})
	}
	return out
}

// conditions builds the three pressure conditions from the threshold results and
// remembers the last crossing of each for the transition period.
func (e *evaluator) conditions(now time.Time, results []ThresholdState, feeds []Feed) ([]corev1.NodeCondition, string) {
	out := make([]corev1.NodeCondition, 0, len(pressureConditions))
	var shape strings.Builder
	for _, t := range pressureConditions {
		txt := conditionTexts[t]
		var crossed []string
		fmt.Fprintf(&shape, "%s:", t)
		for _, r := range results {
			if r.Crossed && r.Signal.Condition() == t {
				crossed = append(crossed, describeCrossing(r))
				fmt.Fprintf(&shape, "%s/%s/%t/%t,", r.Signal, r.Kind(), r.Holding, r.Actionable)
			}
		}
		c := corev1.NodeCondition{Type: t}
		feedText := describeFeeds(feeds, t)
		last, hadCrossing := e.last[t]
		switch {
		case len(crossed) > 0:
			what := strings.Join(crossed, "; ")
			e.last[t] = lastCrossing{at: now, what: what}
			c.Status, c.Reason = corev1.ConditionTrue, txt.trueReason
			c.Message = what + " " + feedText
		case hadCrossing && now.Sub(last.at) < e.transition:
			c.Status, c.Reason = corev1.ConditionTrue, txt.trueReason
			c.Message = fmt.Sprintf("no threshold crossed since %s (then: %s); stays True until none is crossed for %s %s",
				last.at.UTC().Format(time.RFC3339), last.what, e.transition, feedText)
			shape.WriteString("held,")
		default:
			delete(e.last, t)
			c.Status, c.Reason = corev1.ConditionFalse, txt.falseReason
			c.Message = txt.falseMessage + " " + feedText
		}
		fmt.Fprintf(&shape, "%s/%s/%s;", c.Status, c.Reason, feedText)
		out = append(out, c)
	}
	return out, shape.String()
}

// describeCrossing says what was observed against what, such as
// "nodefs.available 3.2Gi < 4.5Gi (10% of 45Gi)".
func describeCrossing(r ThresholdState) string {
	target := r.Target
	var notes []string
	if r.Value.IsPercentage() {
		notes = append(notes, fmt.Sprintf("%s of %s", r.Value, formatAmount(r.Signal, r.Sample.Capacity)))
	}
	if r.Holding {
		target = r.minReclaimTarget()
		notes = append(notes, fmt.Sprintf("threshold %s + minimum reclaim %s",
			formatAmount(r.Signal, r.Target), formatAmount(r.Signal, target-r.Target)))
	}
	if r.Soft() {
		notes = append(notes, fmt.Sprintf("soft, grace period %s", r.GracePeriod))
	}
	s := fmt.Sprintf("%s %s < %s", r.Signal, formatAmount(r.Signal, r.Sample.Available), formatAmount(r.Signal, target))
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	return s
}

// describeFeeds lists the feeds that inform condition t: "(signals: psi, meminfo;
// unavailable: ebpf-oom)".
func describeFeeds(feeds []Feed, t corev1.NodeConditionType) string {
	var active, inactive []string
	for _, f := range feeds {
		if !slices.Contains(f.Conditions, t) {
			continue
		}
		if f.Active {
			active = append(active, f.Name)
		} else {
			inactive = append(inactive, f.Name)
		}
	}
	s := "(signals: "
	if len(active) == 0 {
		s += "none"
	} else {
		s += strings.Join(active, ", ")
	}
	if len(inactive) > 0 {
		s += "; unavailable: " + strings.Join(inactive, ", ")
	}
	return s + ")"
}

// formatAmount prints a signal's amount: bytes in binary units with at most one
// decimal ("80Mi", "3.2Gi"), counts as whole numbers.
func formatAmount(s Signal, v int64) string {
	if !s.isBytes() {
		return strconv.FormatInt(v, 10)
	}
	return formatBytes(v)
}

func formatBytes(v int64) string {
	sign := ""
	u := uint64(v)
	if v < 0 {
		sign, u = "-", uint64(-(v+1))+1
	}
	const units = "KMGTPE"
	if u < 1024 {
		return sign + strconv.FormatUint(u, 10)
	}
	f, unit := float64(u), -1
	for f >= 1024 && unit < len(units)-1 {
		f /= 1024
		unit++
	}
	text := strconv.FormatFloat(f, 'f', 1, 64)
	if text == "1024.0" && unit < len(units)-1 { // rounding reached the next unit
		text, unit = "1.0", unit+1
	}
	text = strings.TrimSuffix(text, ".0")
	return sign + text + string(units[unit]) + "i"
}
