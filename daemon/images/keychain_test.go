package images

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

func dockerConfigSecret(name, registry, user, pass string) corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	s := corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{
		corev1.DockerConfigJsonKey: []byte(`{"auths":{"` + registry + `":{"auth":"` + auth + `"}}}`),
	}}
	s.Name, s.Namespace = name, "default"
	return s
}

func resolveFor(t *testing.T, kc authn.Keychain, image string) authn.AuthConfig {
	t.Helper()
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		t.Fatal(err)
	}
	a, err := kc.Resolve(ref.Context())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := a.Authorization()
	if err != nil {
		t.Fatal(err)
	}
	return *cfg
}

func TestKeychainFromSecretsMatchesRegistries(t *testing.T) {
	legacy := corev1.Secret{Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{
		corev1.DockerConfigKey: []byte(`{"https://index.docker.io/v1/":{"username":"hub","password":"hubpw"}}`),
	}}
	ignored := corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"x": []byte("not json")}}
	kc, err := KeychainFromSecrets([]corev1.Secret{
		dockerConfigSecret("a", "registry.example.com:5000", "alice", "pw1"),
		dockerConfigSecret("b", "quay.io/team", "bob", "pw2"),
		dockerConfigSecret("c", "*.corp.example", "carol", "pw3"),
		legacy, ignored,
	})
	if err != nil {
		t.Fatal(err)
	}
	for image, wantUser := range map[string]string{
		"registry.example.com:5000/app:v1": "alice",
		"registry.example.com/app:v1":      "", // another port is another registry
		"quay.io/team/app":                 "bob",
		"quay.io/teammate/app":             "", // the path is a prefix by components
		"eu.corp.example/app":              "carol",
		"a.b.corp.example/app":             "", // a glob label matches one label
		"busybox":                          "hub",
		"docker.io/library/busybox":        "hub",
		"gcr.io/other/app":                 "",
	} {
		if got := resolveFor(t, kc, image).Username; got != wantUser {
			t.Errorf("%s: user %q, want %q", image, got, wantUser)
		}
	}
}

func TestParseDockerConfigJSONErrorsNameTheField(t *testing.T) {
	for _, bad := range []string{
		`{"auths":{"r.io":{"auth":"%%%"}}}`,
		`{"auths":{"r.io":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("nocolon")) + `"}}}`,
		`{"auths":{"https://":{"username":"u"}}}`,
		`not json`,
	} {
		if _, err := ParseDockerConfigJSON([]byte(bad)); err == nil {
			t.Errorf("ParseDockerConfigJSON(%s) succeeded", bad)
		}
	}
	_, err := KeychainFromSecrets([]corev1.Secret{dockerConfigSecret("broken", "r.io", "u", "p")})
	if err != nil {
		t.Fatal(err)
	}
	s := dockerConfigSecret("broken", "r.io", "u", "p")
	s.Data[corev1.DockerConfigJsonKey] = []byte("{")
	if _, err := KeychainFromSecrets([]corev1.Secret{s}); err == nil || !strings.Contains(err.Error(), "default/broken") {
		t.Errorf("error %v does not name the Secret default/broken", err)
	}
}

func FuzzParseDockerConfigJSON(f *testing.F) {
	f.Add([]byte(`{"auths":{"registry:5000":{"auth":"dTpw"}}}`))
	f.Add([]byte(`{"auths":{"https://index.docker.io/v1/":{"username":"u","password":"p","identitytoken":"t"}}}`))
	f.Add([]byte(`{"auths":{"*.example.com/path":{"registrytoken":"x"}}}`))
	f.Add([]byte(`{"https://quay.io":{"auth":"YTpi"}}`))
	f.Add([]byte(`{"auths":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte) ([]registryCredential, error){ParseDockerConfigJSON, ParseDockerCfg} {
			creds, err := parse(data)
			if err != nil {
				continue
			}
			kc := secretKeychain{creds: creds}
			for _, image := range []string{"registry:5000/a", "busybox", "quay.io/x/y"} {
				ref, _ := name.ParseReference(image)
				a, err := kc.Resolve(ref.Context())
				if err != nil || a == nil {
					t.Fatalf("Resolve(%s) = %v, %v", image, a, err)
				}
			}
		}
	})
}
