package registry

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/control/apiserver"
)

// ConfigMaps is core/v1 configmaps, namespaced.
func ConfigMaps() *apiserver.Resource {
	return &apiserver.Resource{
		GroupVersion: schema.GroupVersion{Version: "v1"},
		Plural:       "configmaps", Kind: "ConfigMap", Namespaced: true, ShortNames: []string{"cm"},
		New: func() runtime.Object { return &corev1.ConfigMap{} },
		Validate: func(obj runtime.Object) field.ErrorList {
			return validateConfigMap(obj.(*corev1.ConfigMap))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			c, o := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
			var changed []*field.Path
			if !maps.Equal(c.Data, o.Data) {
				changed = append(changed, field.NewPath("data"))
			}
			if !equalData(c.BinaryData, o.BinaryData) {
				changed = append(changed, field.NewPath("binaryData"))
			}
			return validateImmutable(isImmutable(c.Immutable), isImmutable(o.Immutable), changed...)
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Data", Type: "string", Description: "Data contains the configuration data."},
			apiserver.AgeColumn,
		},
		Row: func(obj runtime.Object, now time.Time) []any {
			c := obj.(*corev1.ConfigMap)
			return []any{strconv.Itoa(len(c.Data) + len(c.BinaryData)), apiserver.Age(c.CreationTimestamp, now)}
		},
	}
}

func validateConfigMap(c *corev1.ConfigMap) field.ErrorList {
	errs := validateDataKeys(field.NewPath("data"), stringDataBytes(c.Data))
	binPath := field.NewPath("binaryData")
	errs = append(errs, validateDataKeys(binPath, c.BinaryData)...)
	size := 0
	for _, v := range c.Data {
		size += len(v)
	}
	for _, k := range slices.Sorted(maps.Keys(c.BinaryData)) {
		size += len(c.BinaryData[k])
		if _, dup := c.Data[k]; dup {
			errs = append(errs, field.Invalid(binPath.Key(k), k, "duplicate of key present in data"))
		}
	}
	if size > maxDataBytes {
		errs = append(errs, &field.Error{Type: field.ErrorTypeTooLong, Field: "data", BadValue: "<contents omitted>",
			Detail: fmt.Sprintf("data and binaryData hold %d bytes together; at most %d are allowed", size, maxDataBytes)})
	}
	return errs
}

// validateDataKeys checks the keys of a Secret's or ConfigMap's data, which become file
// names in volumes and names of environment variables: [-._a-zA-Z0-9]+, at most 253
// characters, not "." nor starting with "..". Errors come in key order.
func validateDataKeys(p *field.Path, data map[string][]byte) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(data)) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
	}
	return errs
}
