package registry

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzSecretValidation feeds arbitrary Secret bodies through defaulting and validation:
// nothing panics, stringData never survives defaulting, defaulting is idempotent, what
// validates has only valid keys within the size limit, and an unchanged valid secret
// passes update validation (immutable or not).
func FuzzSecretValidation(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"s"},"data":{"a":"MQ=="},"stringData":{"a":"2","b":"3"}}`,
		`{"type":"kubernetes.io/dockerconfigjson","data":{".dockerconfigjson":"eyJhdXRocyI6e319"}}`,
		`{"type":"kubernetes.io/dockerconfigjson","stringData":{".dockerconfigjson":"{auths"}}`,
		`{"type":"kubernetes.io/dockercfg","stringData":{".dockercfg":"[]"}}`,
		`{"type":"kubernetes.io/tls","stringData":{"tls.crt":"c"}}`,
		`{"type":"kubernetes.io/basic-auth","stringData":{"password":""}}`,
		`{"type":"kubernetes.io/ssh-auth","data":{"ssh-privatekey":""}}`,
		`{"type":"kubernetes.io/service-account-token","metadata":{"annotations":{"kubernetes.io/service-account.name":"x"}}}`,
		`{"immutable":true,"stringData":{"..a":"x","a/b":"y",".":"z"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s corev1.Secret
		if json.Unmarshal(data, &s) != nil {
			return
		}
		defaultSecret(&s)
		if s.StringData != nil || s.Type == "" {
			t.Fatalf("after defaulting: stringData %v, type %q", s.StringData, s.Type)
		}
		once := s.DeepCopy()
		defaultSecret(&s)
		a, _ := json.Marshal(once)
		b, _ := json.Marshal(&s)
		if string(a) != string(b) {
			t.Fatalf("defaulting twice changed the secret:\n%s\n%s", a, b)
		}
		if errs := validateSecret(&s); len(errs) == 0 {
			size := 0
			for k, v := range s.Data {
				if msgs := validation.IsConfigMapKey(k); len(msgs) > 0 {
					t.Fatalf("accepted key %q: %v", k, msgs)
				}
				size += len(v)
			}
			if size > maxDataBytes {
				t.Fatalf("accepted %d bytes", size)
			}
			if errs := validateSecretUpdate(&s, s.DeepCopy()); len(errs) > 0 {
				t.Fatalf("an unchanged valid secret fails update validation: %v", errs)
			}
		}
	})
}

// FuzzConfigMapValidation is FuzzSecretValidation for ConfigMaps: no panic, accepted
// keys are valid and never in both data and binaryData, and an unchanged valid
// configmap passes update validation.
func FuzzConfigMapValidation(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"c"},"data":{"a":"1"},"binaryData":{"b":"AAE="}}`,
		`{"data":{"a":"1"},"binaryData":{"a":"AAE="}}`,
		`{"immutable":true,"data":{"a b":"1"}}`,
	} {
		f.Add([]byte(seed))
	}
	r := ConfigMaps()
	f.Fuzz(func(t *testing.T, data []byte) {
		var c corev1.ConfigMap
		if json.Unmarshal(data, &c) != nil {
			return
		}
		if errs := validateConfigMap(&c); len(errs) == 0 {
			for k := range c.BinaryData {
				if _, dup := c.Data[k]; dup {
					t.Fatalf("accepted key %q in both data and binaryData", k)
				}
				if msgs := validation.IsConfigMapKey(k); len(msgs) > 0 {
					t.Fatalf("accepted binaryData key %q: %v", k, msgs)
				}
			}
			for k := range c.Data {
				if msgs := validation.IsConfigMapKey(k); len(msgs) > 0 {
					t.Fatalf("accepted data key %q: %v", k, msgs)
				}
			}
			if errs := r.ValidateUpdate(&c, c.DeepCopy()); len(errs) > 0 {
				t.Fatalf("an unchanged valid configmap fails update validation: %v", errs)
			}
		}
	})
}
