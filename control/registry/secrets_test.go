package registry

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func newSecret(typ corev1.SecretType, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Type: typ}
	if data != nil {
		s.Data = stringDataBytes(data)
	}
	return s
}

// refusedFields lists the fields of errs, for comparison with what a case expects.
func refusedFields(errs field.ErrorList) string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return strings.Join(out, ",")
}

func TestSecretValidation(t *testing.T) {
	const dockerJSON = `{"auths":{"registry.example":{"auth":"dTpw"}}}`
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		fields string // the fields refused, in order; "" accepts
	}{
		{"opaque", newSecret(corev1.SecretTypeOpaque, map[string]string{"a": "1", "b.c-d_e": ""}), ""},
		{"custom type", newSecret("example.com/thing", map[string]string{"x": "y"}), ""},
		{"no data", newSecret(corev1.SecretTypeOpaque, nil), ""},
		{"key with a slash", newSecret(corev1.SecretTypeOpaque, map[string]string{"a/b": "1"}), "data"},
		{"key that is a dot", newSecret(corev1.SecretTypeOpaque, map[string]string{".": "1"}), "data"},
		{"key starting with two dots", newSecret(corev1.SecretTypeOpaque, map[string]string{"..a": "1"}), "data"},
		{"key too long", newSecret(corev1.SecretTypeOpaque, map[string]string{strings.Repeat("k", 254): "1"}), "data"},
		{"empty key", newSecret(corev1.SecretTypeOpaque, map[string]string{"": "1"}), "data"},
		{"at the size limit", newSecret(corev1.SecretTypeOpaque, map[string]string{"a": strings.Repeat("x", 1<<19), "b": strings.Repeat("x", 1<<19)}), ""},
		{"over the size limit", newSecret(corev1.SecretTypeOpaque, map[string]string{"a": strings.Repeat("x", 1<<19), "b": strings.Repeat("x", 1<<19+1)}), "data"},

		{"dockerconfigjson", newSecret(corev1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": dockerJSON}), ""},
		{"dockerconfigjson without its key", newSecret(corev1.SecretTypeDockerConfigJson, map[string]string{"config.json": dockerJSON}), "data[.dockerconfigjson]"},
		{"dockerconfigjson not JSON", newSecret(corev1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": "{auths"}), "data[.dockerconfigjson]"},
		{"dockerconfigjson a JSON list", newSecret(corev1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": "[]"}), "data[.dockerconfigjson]"},
		{"dockercfg", newSecret(corev1.SecretTypeDockercfg, map[string]string{".dockercfg": `{"registry.example":{"auth":"dTpw"}}`}), ""},
		{"dockercfg without its key", newSecret(corev1.SecretTypeDockercfg, nil), "data[.dockercfg]"},
		{"dockercfg not JSON", newSecret(corev1.SecretTypeDockercfg, map[string]string{".dockercfg": "nope"}), "data[.dockercfg]"},
		{"tls", newSecret(corev1.SecretTypeTLS, map[string]string{"tls.crt": "c", "tls.key": "k"}), ""},
		{"tls without a key", newSecret(corev1.SecretTypeTLS, map[string]string{"tls.crt": "c"}), "data[tls.key]"},
		{"tls without either", newSecret(corev1.SecretTypeTLS, nil), "data[tls.crt],data[tls.key]"},
		{"basic-auth username only", newSecret(corev1.SecretTypeBasicAuth, map[string]string{"username": "u"}), ""},
		{"basic-auth empty password only", newSecret(corev1.SecretTypeBasicAuth, map[string]string{"password": ""}), ""},
		{"basic-auth neither", newSecret(corev1.SecretTypeBasicAuth, map[string]string{"user": "u"}), "data[username],data[password]"},
		{"ssh-auth", newSecret(corev1.SecretTypeSSHAuth, map[string]string{"ssh-privatekey": "k"}), ""},
		{"ssh-auth without the key", newSecret(corev1.SecretTypeSSHAuth, map[string]string{"id_rsa": "k"}), "data[ssh-privatekey]"},
		{"service account token without its account", newSecret(corev1.SecretTypeServiceAccountToken, nil), "metadata.annotations[kubernetes.io/service-account.name]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := refusedFields(validateSecret(tc.secret)); got != tc.fields {
				t.Fatalf("refused fields %q, want %q: %v", got, tc.fields, validateSecret(tc.secret))
			}
		})
	}
}

func TestSecretErrorsNameKeyAndLimit(t *testing.T) {
	errs := validateSecret(newSecret(corev1.SecretTypeOpaque, map[string]string{"a/b": "1"}))
	if len(errs) != 1 || !strings.Contains(errs.ToAggregate().Error(), `"a/b"`) {
		t.Fatalf("a bad key is not named: %v", errs)
	}
	errs = validateSecret(newSecret(corev1.SecretTypeOpaque, map[string]string{"a": strings.Repeat("x", 1<<20+1)}))
	if len(errs) != 1 || !strings.Contains(errs.ToAggregate().Error(), "1048576") {
		t.Fatalf("the size limit is not named: %v", errs)
	}
	// The contents of a secret never appear in an error.
	errs = validateSecret(newSecret(corev1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": "hunter2-not-json"}))
	if len(errs) != 1 || strings.Contains(errs.ToAggregate().Error(), "hunter2") {
		t.Fatalf("dockerconfigjson error leaks the contents or is missing: %v", errs)
	}
}

func TestSecretStringDataMergedAndDropped(t *testing.T) {
	s := newSecret("", map[string]string{"a": "from-data", "b": "kept"})
	s.StringData = map[string]string{"a": "from-stringData", "c": "new"}
	defaultSecret(s)
	want := map[string]string{"a": "from-stringData", "b": "kept", "c": "new"}
	if len(s.Data) != len(want) {
		t.Fatalf("data after merge = %v, want %v", s.Data, want)
	}
	for k, v := range want {
		if string(s.Data[k]) != v {
			t.Fatalf("data[%s] = %q, want %q", k, s.Data[k], v)
		}
	}
	if s.StringData != nil {
		t.Fatalf("stringData kept: %v", s.StringData)
	}
	if s.Type != corev1.SecretTypeOpaque {
		t.Fatalf("type defaulted to %q, want Opaque", s.Type)
	}

	// stringData alone fills an empty data, and its keys are validated as data keys.
	only := newSecret(corev1.SecretTypeBasicAuth, nil)
	only.StringData = map[string]string{"username": "u"}
	defaultSecret(only)
	if string(only.Data["username"]) != "u" || len(validateSecret(only)) != 0 {
		t.Fatalf("stringData alone: data %v, errors %v", only.Data, validateSecret(only))
	}
	bad := newSecret(corev1.SecretTypeOpaque, nil)
	bad.StringData = map[string]string{"no/slash": "x"}
	defaultSecret(bad)
	if got := refusedFields(validateSecret(bad)); got != "data" {
		t.Fatalf("a bad stringData key refused at %q, want data", got)
	}
}

func TestSecretUpdate(t *testing.T) {
	yes, no := true, false
	old := newSecret(corev1.SecretTypeOpaque, map[string]string{"a": "1"})
	for _, tc := range []struct {
		name   string
		old    func(*corev1.Secret)
		update func(*corev1.Secret)
		fields string
	}{
		{"data changes while mutable", nil, func(s *corev1.Secret) { s.Data["a"] = []byte("2") }, ""},
		{"becoming immutable", nil, func(s *corev1.Secret) { s.Immutable = &yes }, ""},
		{"type is immutable", nil, func(s *corev1.Secret) { s.Type = corev1.SecretTypeTLS }, "type"},
		{"immutable: labels may change", func(s *corev1.Secret) { s.Immutable = &yes },
			func(s *corev1.Secret) { s.Labels = map[string]string{"x": "y"} }, ""},
		{"immutable: data may not change", func(s *corev1.Secret) { s.Immutable = &yes },
			func(s *corev1.Secret) { s.Data["a"] = []byte("2") }, "data"},
		{"immutable: no key may be added", func(s *corev1.Secret) { s.Immutable = &yes },
			func(s *corev1.Secret) { s.Data["b"] = []byte("1") }, "data"},
		{"immutable: may not turn mutable", func(s *corev1.Secret) { s.Immutable = &yes },
			func(s *corev1.Secret) { s.Immutable = &no }, "immutable"},
		{"immutable: may not drop the flag", func(s *corev1.Secret) { s.Immutable = &yes },
			func(s *corev1.Secret) { s.Immutable = nil }, "immutable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := old.DeepCopy()
			if tc.old != nil {
				tc.old(o)
			}
			n := o.DeepCopy()
			tc.update(n)
			if got := refusedFields(validateSecretUpdate(n, o)); got != tc.fields {
				t.Fatalf("refused fields %q, want %q", got, tc.fields)
			}
		})
	}
}

func TestSecretRowAndFields(t *testing.T) {
	r := Secrets()
	s := newSecret(corev1.SecretTypeDockerConfigJson, map[string]string{".dockerconfigjson": "{}"})
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
	row := r.Row(s, now)
	if len(row) != 3 || row[0] != "kubernetes.io/dockerconfigjson" || row[1] != "1" || row[2] != "90s" {
		t.Fatalf("row = %v", row)
	}
	if len(r.Columns) != 3 || r.Columns[0].Name != "Type" || r.Columns[1].Name != "Data" || r.Columns[2].Name != "Age" {
		t.Fatalf("columns = %v", r.Columns)
	}
	if got := r.SelectableFields(s)["type"]; got != "kubernetes.io/dockerconfigjson" {
		t.Fatalf("type field = %q", got)
	}
}

func TestConfigMapValidation(t *testing.T) {
	cm := func(data map[string]string, binary map[string]string) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: data}
		if binary != nil {
			c.BinaryData = stringDataBytes(binary)
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		c      *corev1.ConfigMap
		fields string
	}{
		{"data and binaryData", cm(map[string]string{"a": "1"}, map[string]string{"b": "\x00"}), ""},
		{"empty", cm(nil, nil), ""},
		{"bad data key", cm(map[string]string{"a b": "1"}, nil), "data"},
		{"bad binaryData key", cm(nil, map[string]string{"..x": "1"}), "binaryData"},
		{"same key in both", cm(map[string]string{"a": "1"}, map[string]string{"a": "2"}), "binaryData[a]"},
		{"size counts both", cm(map[string]string{"a": strings.Repeat("x", 1<<19)}, map[string]string{"b": strings.Repeat("x", 1<<19+1)}), "data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := refusedFields(validateConfigMap(tc.c)); got != tc.fields {
				t.Fatalf("refused fields %q, want %q: %v", got, tc.fields, validateConfigMap(tc.c))
			}
		})
	}

	yes := true
	r := ConfigMaps()
	old := cm(map[string]string{"a": "1"}, map[string]string{"b": "2"})
	old.Immutable = &yes
	changed := old.DeepCopy()
	changed.Data["a"], changed.BinaryData["b"] = "x", []byte("y")
	if got := refusedFields(r.ValidateUpdate(changed, old)); got != "data,binaryData" {
		t.Fatalf("immutable configmap update refused %q, want data,binaryData", got)
	}
	relabeled := old.DeepCopy()
	relabeled.Labels = map[string]string{"x": "y"}
	if errs := r.ValidateUpdate(relabeled, old); len(errs) != 0 {
		t.Fatalf("relabeling an immutable configmap refused: %v", errs)
	}
	if row := r.Row(old, time.Now()); row[0] != "2" {
		t.Fatalf("DATA counts data and binaryData: %v", row)
	}
}
