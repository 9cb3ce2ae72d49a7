package pressure

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Configuration field names, used in the paths of validation errors so they name the
// field a user wrote.
const (
	FieldEvictionHard            = "evictionHard"
	FieldEvictionSoft            = "evictionSoft"
	FieldEvictionSoftGracePeriod = "evictionSoftGracePeriod"
	FieldEvictionMinimumReclaim  = "evictionMinimumReclaim"
)

// DefaultEvictionHard returns the default hard thresholds (kubelet's, plus
// pid.available<5%, which kubelet lacks). Every call returns a fresh map.
func DefaultEvictionHard() map[string]string {
	return map[string]string{
		string(SignalMemoryAvailable):   "100Mi",
		string(SignalNodefsAvailable):   "10%",
		string(SignalNodefsInodesFree):  "5%",
		string(SignalImagefsAvailable):  "15%",
		string(SignalImagefsInodesFree): "5%",
		string(SignalPIDAvailable):      "5%",
	}
}

// Value is an amount in a threshold or a minimum reclaim: either an absolute quantity
// (bytes for memory and filesystem space, a count for inodes and PIDs) or a percentage
// of the signal's capacity. The zero Value is zero.
type Value struct {
	// Quantity is the absolute amount, or nil when Percentage applies.
	Quantity *resource.Quantity
	// Percentage is a fraction of capacity between 0 and 1.
	Percentage float64
	text       string
}

// Resolve is the amount for a signal whose capacity is capacity. A percentage rounds
// down, as kubelet's does.
func (v Value) Resolve(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(float64(capacity) * v.Percentage)
}

// IsPercentage reports whether the value is relative to capacity.
func (v Value) IsPercentage() bool { return v.Quantity == nil && v.Percentage > 0 }

// IsZero reports whether the value resolves to 0 whatever the capacity.
func (v Value) IsZero() bool {
	if v.Quantity != nil {
		return v.Quantity.IsZero()
	}
	return v.Percentage == 0
}

// String is the value as it was written ("100Mi", "10%"), or "0".
func (v Value) String() string {
	switch {
	case v.text != "":
		return v.text
	case v.Quantity != nil:
		return v.Quantity.String()
	case v.Percentage != 0:
		return strconv.FormatFloat(v.Percentage*100, 'f', -1, 64) + "%"
	}
	return "0"
}

// Threshold is one eviction threshold: Signal < Value.
type Threshold struct {
	Signal Signal
	// Value is crossed when the signal's available amount is below it.
	Value Value
	// GracePeriod is how long a soft threshold must stay crossed before pods are
	// evicted for it; 0 for a hard threshold.
	GracePeriod time.Duration
	// MinReclaim keeps a crossed threshold crossed until the available amount is at
	// least Value + MinReclaim, so eviction reclaims a margin instead of hovering at
	// the threshold.
	MinReclaim Value
}

// Soft reports whether the threshold has a grace period.
func (t Threshold) Soft() bool { return t.GracePeriod > 0 }

// Kind is "soft" or "hard", the kind label of the threshold metric.
func (t Threshold) Kind() string {
	if t.Soft() {
		return "soft"
	}
	return "hard"
}

// String is the threshold in kubelet's flag syntax, such as "memory.available<100Mi".
func (t Threshold) String() string { return string(t.Signal) + "<" + t.Value.String() }

// ThresholdSpec is the eviction configuration as written: signal name -> value, in
// the shape of kubelet's evictionHard, evictionSoft, evictionSoftGracePeriod and
// evictionMinimumReclaim.
type ThresholdSpec struct {
	Hard            map[string]string
	Soft            map[string]string
	SoftGracePeriod map[string]time.Duration
	MinimumReclaim  map[string]string
}

// ParseThresholds validates spec and returns its thresholds, hard before soft for each
// signal, signals in eviction order. Thresholds of "0", "0%" or "100%" are left out:
// the first two can never be crossed and kubelet documents the last as off, so these
// are how a default threshold is turned off. The error joins one *field.Error per
// problem, each naming the field (such as evictionHard[memory.available]) and value.
func ParseThresholds(spec ThresholdSpec) ([]Threshold, error) {
	var errs field.ErrorList
	errs = append(errs, ValidateThresholdValues(field.NewPath(FieldEvictionHard), spec.Hard)...)
	errs = append(errs, ValidateThresholdValues(field.NewPath(FieldEvictionSoft), spec.Soft)...)
	errs = append(errs, ValidateGracePeriods(field.NewPath(FieldEvictionSoftGracePeriod), spec.SoftGracePeriod)...)
	errs = append(errs, ValidateMinimumReclaim(field.NewPath(FieldEvictionMinimumReclaim), spec.MinimumReclaim)...)
	errs = append(errs, ValidateSoftGracePairs(field.NewPath(FieldEvictionSoft), field.NewPath(FieldEvictionSoftGracePeriod),
		spec.Soft, spec.SoftGracePeriod)...)
	if len(errs) > 0 {
		list := make([]error, len(errs))
		for i, e := range errs {
			list[i] = e
		}
		return nil, errors.Join(list...)
	}
	var out []Threshold
	for _, s := range signalOrder {
		name := string(s)
		var minReclaim Value
		if text, ok := spec.MinimumReclaim[name]; ok {
			minReclaim, _ = parseValue(s, text) // validated above
		}
		if text, ok := spec.Hard[name]; ok {
			if v, _ := parseValue(s, text); !turnsOff(v) {
				out = append(out, Threshold{Signal: s, Value: v, MinReclaim: minReclaim})
			}
		}
		if text, ok := spec.Soft[name]; ok {
			if v, _ := parseValue(s, text); !turnsOff(v) {
				out = append(out, Threshold{Signal: s, Value: v, GracePeriod: spec.SoftGracePeriod[name], MinReclaim: minReclaim})
			}
		}
	}
	return out, nil
}

// turnsOff reports whether a threshold value means "no threshold".
func turnsOff(v Value) bool {
	return v.IsZero() || (v.Quantity == nil && v.Percentage == 1)
}

// ValidateThresholdValues checks an evictionHard or evictionSoft map: known signal
// names, and values that are non-negative whole quantities or percentages from 0% to
// 100%.
func ValidateThresholdValues(path *field.Path, m map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(m) {
		p := path.Key(name)
		s, err := knownSignal(p, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := parseValue(s, m[name]); err != nil {
			errs = append(errs, field.Invalid(p, m[name], err.Error()+`; write "0%" to turn the threshold off`))
		}
	}
	return errs
}

// ValidateGracePeriods checks evictionSoftGracePeriod: known signal names and positive
// durations.
func ValidateGracePeriods(path *field.Path, m map[string]time.Duration) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(m) {
		p := path.Key(name)
		if _, err := knownSignal(p, name); err != nil {
			errs = append(errs, err)
			continue
		}
		if d := m[name]; d <= 0 {
			errs = append(errs, field.Invalid(p, d.String(), `must be a positive duration such as "1m30s"`))
		}
	}
	return errs
}

// ValidateMinimumReclaim checks evictionMinimumReclaim: known signal names and values
// that are non-negative whole quantities or percentages from 0% to 100%.
func ValidateMinimumReclaim(path *field.Path, m map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(m) {
		p := path.Key(name)
		s, err := knownSignal(p, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := parseValue(s, m[name]); err != nil {
			errs = append(errs, field.Invalid(p, m[name], err.Error()))
		}
	}
	return errs
}

// ValidateSoftGracePairs checks that every soft threshold has a grace period and every
// grace period belongs to a soft threshold. It compares two fields, so configuration
// runs it on the merged result of all files, not file by file.
func ValidateSoftGracePairs(softPath, gracePath *field.Path, soft map[string]string, grace map[string]time.Duration) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(soft) {
		if _, ok := grace[name]; !ok {
			errs = append(errs, field.Required(softPath.Key(name),
				fmt.Sprintf("soft threshold %s<%s has no grace period: set %s too",
					name, soft[name], gracePath.Key(name))))
		}
	}
	for _, name := range sortedKeys(grace) {
		if _, ok := soft[name]; !ok {
			errs = append(errs, field.Invalid(gracePath.Key(name), grace[name].String(),
				fmt.Sprintf("grace period for a soft threshold that is not set: set %s too, or remove this entry",
					softPath.Key(name))))
		}
	}
	return errs
}

func knownSignal(p *field.Path, name string) (Signal, *field.Error) {
	s := Signal(name)
	if !s.Known() {
		names := make([]string, len(signalOrder))
		for i, k := range signalOrder {
			names[i] = string(k)
		}
		return "", field.NotSupported(p, name, names)
	}
	return s, nil
}

// parseValue parses "100Mi", "1Gi", "1000" or "10%" for signal s. The error says what
// would be accepted.
func parseValue(s Signal, text string) (Value, error) {
	if pct, ok := strings.CutSuffix(text, "%"); ok {
		p, err := parsePercentage(pct)
		if err != nil {
			return Value{}, err
		}
		return Value{Percentage: p, text: text}, nil
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return Value{}, fmt.Errorf("must be a quantity of %s such as %s or a percentage of capacity such as \"10%%\"", s.unit(), exampleQuantity(s))
	}
	if q.Sign() < 0 {
		return Value{}, errors.New("must not be negative")
	}
	if q.Cmp(*resource.NewQuantity(math.MaxInt64, resource.DecimalSI)) > 0 {
		return Value{}, fmt.Errorf("must be at most %d %s", int64(math.MaxInt64), s.unit())
	}
	if q.Cmp(*resource.NewQuantity(q.Value(), resource.DecimalSI)) != 0 {
		return Value{}, fmt.Errorf("must be a whole number of %s", s.unit())
	}
	return Value{Quantity: &q, text: text}, nil
}

// parsePercentage parses the number of a percentage: digits with an optional
// fraction, from 0 to 100, returned as a fraction of 1. Signs, exponents, hex, Inf
// and NaN, which strconv.ParseFloat would take, are refused.
func parsePercentage(s string) (float64, error) {
	errWant := errors.New(`must be a percentage from 0% to 100% such as "10%" or "7.5%"`)
	intPart, frac, hasDot := strings.Cut(s, ".")
	if intPart == "" || !allDigits(intPart) || (hasDot && (frac == "" || !allDigits(frac))) {
		return 0, errWant
	}
	p, err := strconv.ParseFloat(s, 64)
	if err != nil || p > 100 {
		return 0, errWant
	}
	return p / 100, nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func exampleQuantity(s Signal) string {
	if s.isBytes() {
		return `"100Mi" or "2Gi"`
	}
	return `"1000"`
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
