package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkSchema compares a decoded JSON document (objects as map[string]any, numbers as
// json.Number) with the Go type it will be decoded into, and reports every unknown
// field and every value of the wrong type with its full path. encoding/json stops at
// the first problem and names neither array indexes nor the field of an unknown key,
// which is why this walk exists; the actual decoding is still left to encoding/json.
//
// Field names match case-sensitively, as in Kubernetes' strict decoding; a YAML null is
// accepted anywhere except as a list element (see the package comment for its meaning).
func checkSchema(path *field.Path, v any, t reflect.Type) field.ErrorList {
	if v == nil {
		return nil
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		raw, err := json.Marshal(v)
		if err == nil {
			err = reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw)
		}
		if err != nil {
			return field.ErrorList{field.Invalid(path, shortValue(v), "must be "+describeType(t))}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkSchema(path, v, t.Elem())
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return wrongType(path, v, t)
		}
		return checkStruct(path, obj, t)
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String {
			return wrongType(path, v, t)
		}
		var errs field.ErrorList
		for _, k := range sortedKeys(obj) {
			errs = append(errs, checkSchema(path.Key(k), obj[k], t.Elem())...)
		}
		return errs
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return wrongType(path, v, t)
		}
		var errs field.ErrorList
		for i, e := range list {
			if e == nil {
				errs = append(errs, field.Invalid(path.Index(i), nil, "a list element cannot be null"))
				continue
			}
			errs = append(errs, checkSchema(path.Index(i), e, t.Elem())...)
		}
		return errs
	case reflect.String:
		if _, ok := v.(string); !ok {
			return wrongType(path, v, t)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return wrongType(path, v, t)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, v, t)
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			return wrongType(path, v, t)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, v, t)
		}
		if _, err := strconv.ParseUint(string(n), 10, t.Bits()); err != nil {
			return wrongType(path, v, t)
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, v, t)
		}
		if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			return wrongType(path, v, t)
		}
	default:
		// A field type the walker does not know is a programming error in Config,
		// caught by the package's tests; report it rather than panic on user input.
		return field.ErrorList{field.InternalError(path, fmt.Errorf("config field of unsupported type %s", t))}
	}
	return nil
}

func checkStruct(path *field.Path, obj map[string]any, t reflect.Type) field.ErrorList {
	fields := jsonFields(t)
	var errs field.ErrorList
	for _, k := range sortedKeys(obj) {
		ft, ok := fields[k]
		if !ok {
			errs = append(errs, unknownField(path.Child(k), k, obj[k], fields))
			continue
		}
		errs = append(errs, checkSchema(path.Child(k), obj[k], ft)...)
	}
	return errs
}

func unknownField(path *field.Path, name string, v any, known map[string]reflect.Type) *field.Error {
	names := sortedKeys(known)
	detail := fmt.Sprintf("unknown field (set to %s)", shortJSON(v))
	if i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, name) }); i >= 0 {
		detail += fmt.Sprintf("; did you mean %q? field names are case-sensitive", names[i])
	}
	detail += "; fields accepted here: " + strings.Join(names, ", ")
	return field.Forbidden(path, detail)
}

// jsonFields maps the JSON names of a struct's fields to their types, following
// encoding/json's rules for tags and untagged embedded structs.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for n, ft := range jsonFields(et) {
					out[n] = ft
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func wrongType(path *field.Path, v any, t reflect.Type) field.ErrorList {
	return field.ErrorList{field.TypeInvalid(path, shortValue(v),
		fmt.Sprintf("is %s, must be %s", describeValue(v), describeType(t)))}
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	durationType        = reflect.TypeFor[metav1.Duration]()
	timeType            = reflect.TypeFor[metav1.Time]()
)

// describeType says in words what a user should write for a value of type t.
func describeType(t reflect.Type) string {
	switch t {
	case durationType:
		return `a duration string such as "10s", "1m30s" or "5m"`
	case timeType:
		return `an RFC 3339 time such as "2006-01-02T15:04:05Z"`
	}
	switch t.Kind() {
	case reflect.Pointer:
		return describeType(t.Elem())
	case reflect.Struct:
		return "a mapping of field names to values"
	case reflect.Map:
		return "a mapping of names to " + strings.TrimPrefix(describeType(t.Elem()), "a ")
	case reflect.Slice:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("a whole number that fits in %d bits", t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a non-negative whole number that fits in %d bits", t.Bits())
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

// describeValue names the kind of a decoded JSON value.
func describeValue(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "a fractional number"
		}
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// shortValue is v as field.Error should print it: strings as themselves, anything
// else as JSON text, cut short so one bad value cannot flood the error.
func shortValue(v any) any {
	if s, ok := v.(string); ok {
		return truncate(s)
	}
	return jsonText(shortJSON(v))
}

func shortJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return truncate(string(raw))
}

func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "..."
}

// jsonText is JSON text that field.Error prints as-is: field.Error JSON-encodes values
// it does not know, so the text is its own encoding; when truncation made it invalid
// JSON, encoding fails and field.Error falls back to String.
type jsonText string

func (j jsonText) MarshalJSON() ([]byte, error) { return []byte(j), nil }
func (j jsonText) String() string               { return string(j) }
