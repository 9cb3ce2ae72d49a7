package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/control/apiserver"
)

// maxDataBytes is Kubernetes' limit on the values of one Secret or ConfigMap (its
// MaxSecretSize), so that a single object cannot crowd etcd or a node's memory.
const maxDataBytes = 1 << 20

// Secrets is core/v1 secrets, namespaced. Data is stored as the API returns it (base64
// in JSON, in etcd): encryption at rest is not done here.
func Secrets() *apiserver.Resource {
	return &apiserver.Resource{
		GroupVersion: schema.GroupVersion{Version: "v1"},
		Plural:       "secrets", Kind: "Secret", Namespaced: true,
		New:     func() runtime.Object { return &corev1.Secret{} },
		Default: func(obj runtime.Object) { defaultSecret(obj.(*corev1.Secret)) },
		Validate: func(obj runtime.Object) field.ErrorList {
			return validateSecret(obj.(*corev1.Secret))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateSecretUpdate(obj.(*corev1.Secret), old.(*corev1.Secret))
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Type", Type: "string", Description: "Used to facilitate programmatic handling of secret data."},
			{Name: "Data", Type: "string", Description: "Data contains the secret data."},
			apiserver.AgeColumn,
		},
		Row: func(obj runtime.Object, now time.Time) []any {
			s := obj.(*corev1.Secret)
			return []any{string(s.Type), strconv.Itoa(len(s.Data)), apiserver.Age(s.CreationTimestamp, now)}
		},
	}
}

// defaultSecret merges stringData into data (stringData wins, as it is the write-only
// convenience field) and drops it, so it is never stored nor returned; an empty type
// is Opaque.
func defaultSecret(s *corev1.Secret) {
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

func validateSecret(s *corev1.Secret) field.ErrorList {
	dataPath := field.NewPath("data")
	// stringData is merged into data by defaulting; should it reach validation anyway
	// (a caller without defaults), its keys are data keys too.
	errs := validateDataKeys(dataPath, s.Data)
	errs = append(errs, validateDataKeys(field.NewPath("stringData"), stringDataBytes(s.StringData))...)
	size := 0
	for _, v := range s.Data {
		size += len(v)
	}
	if size > maxDataBytes {
		errs = append(errs, field.TooLong(dataPath, "", maxDataBytes))
	}
	errs = append(errs, validateSecretType(s, dataPath)...)
	return errs
}

func stringDataBytes(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}

// validateSecretType checks what each built-in type requires of data; other types
// (Opaque, bootstrap tokens, anything custom) require nothing.
func validateSecretType(s *corev1.Secret, dataPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	requireKeys := func(keys ...string) {
		for _, k := range keys {
			if _, ok := s.Data[k]; !ok {
				errs = append(errs, field.Required(dataPath.Key(k), fmt.Sprintf("a %s secret must have the key %q", s.Type, k)))
			}
		}
	}
	requireJSON := func(key string) {
		v, ok := s.Data[key]
		if !ok {
			requireKeys(key)
			return
		}
		var doc map[string]any
		if err := json.Unmarshal(v, &doc); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", fmt.Sprintf("must be a JSON object: %v", err)))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), "a service account token secret names its service account"))
		}
	case corev1.SecretTypeDockercfg:
		requireJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		// Either may be empty, but one of them must be there.
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, password := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !password {
			errs = append(errs,
				field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), "a basic-auth secret has a username or a password"),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), "a basic-auth secret has a username or a password"))
		}
	case corev1.SecretTypeSSHAuth:
		requireKeys(corev1.SSHAuthPrivateKey)
	case corev1.SecretTypeTLS:
		requireKeys(corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	return errs
}

func validateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	if s.Type != old.Type {
		errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, fmt.Sprintf("field is immutable (was %s)", old.Type)))
	}
	var changed []*field.Path
	if !equalData(s.Data, old.Data) {
		changed = append(changed, field.NewPath("data"))
	}
	return append(errs, validateImmutable(isImmutable(s.Immutable), isImmutable(old.Immutable), changed...)...)
}

func isImmutable(b *bool) bool { return b != nil && *b }

// validateImmutable refuses, once an object is immutable, turning that off or any
// change to its data (changed lists the data fields that differ from the stored ones).
func validateImmutable(immutable, wasImmutable bool, changed ...*field.Path) field.ErrorList {
	if !wasImmutable {
		return nil
	}
	var errs field.ErrorList
	if !immutable {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
	}
	for _, p := range changed {
		errs = append(errs, field.Forbidden(p, "field is immutable when `immutable` is set"))
	}
	return errs
}

func equalData(a, b map[string][]byte) bool { return maps.EqualFunc(a, b, bytes.Equal) }
