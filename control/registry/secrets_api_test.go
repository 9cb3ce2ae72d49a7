package registry_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/control/registry"
)

func TestSecretsThroughTheAPI(t *testing.T) {
	api := newAPI(t, registry.Config{})
	ctx := context.Background()
	secrets := api.client.CoreV1().Secrets("default")

	created, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data:       map[string][]byte{"user": []byte("old")},
		StringData: map[string]string{"user": "admin", "password": "s3cret"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Type != corev1.SecretTypeOpaque || string(created.Data["user"]) != "admin" || string(created.Data["password"]) != "s3cret" || created.StringData != nil {
		t.Fatalf("created secret: type %q data %q stringData %v", created.Type, created.Data, created.StringData)
	}
	// What etcd holds has no stringData either.
	kv, err := api.store.Get(ctx, "/core/secrets/default/creds")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(kv.Value), "stringData") {
		t.Fatalf("stringData stored: %s", kv.Value)
	}

	// A merge patch of stringData lands in data.
	patched, err := secrets.Patch(ctx, "creds", types.MergePatchType, []byte(`{"stringData":{"password":"rotated"}}`), metav1.PatchOptions{})
	if err != nil || string(patched.Data["password"]) != "rotated" || string(patched.Data["user"]) != "admin" || patched.StringData != nil {
		t.Fatalf("patch stringData: %v data %q", err, patched.Data)
	}

	// Immutable: data changes are refused, metadata changes are not.
	patched.Immutable = ptr(true)
	frozen, err := secrets.Update(ctx, patched, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	frozen.Data["password"] = []byte("again")
	if _, err := secrets.Update(ctx, frozen, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("data change of an immutable secret: %v, want Invalid", err)
	} else if _, ok := statusCause(err, "data"); !ok {
		t.Fatalf("immutable refusal does not name data: %v", err)
	}
	if _, err := secrets.Patch(ctx, "creds", types.MergePatchType, []byte(`{"metadata":{"labels":{"rotated":"no"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("label on an immutable secret: %v", err)
	}

	// A docker-registry secret, as kubectl create secret docker-registry sends it.
	dockerJSON := `{"auths":{"registry.example":{"username":"u","password":"p","auth":"dTpw"}}}`
	if _, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerJSON)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{"config.json": []byte(dockerJSON)},
	}, metav1.CreateOptions{})
	if _, ok := statusCause(err, "data[.dockerconfigjson]"); !ok {
		t.Fatalf("dockerconfigjson without its key: %v, want 422 on data[.dockerconfigjson]", err)
	}
	_, err = secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "huge"},
		Data:       map[string][]byte{"a": make([]byte, 1<<20+1)},
	}, metav1.CreateOptions{})
	if _, ok := statusCause(err, "data"); !ok || !apierrors.IsInvalid(err) {
		t.Fatalf("secret over 1 MiB: %v, want 422 on data", err)
	}

	// The type field selector and kubectl's columns.
	list, err := secrets.List(ctx, metav1.ListOptions{FieldSelector: "type=kubernetes.io/dockerconfigjson"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "pull" {
		t.Fatalf("secrets of type dockerconfigjson: %v, %v", list, err)
	}
	tab := table(t, api.url+"/api/v1/namespaces/default/secrets")
	if got := columnNames(tab, true); !equal(got, []string{"NAME", "TYPE", "DATA", "AGE"}) {
		t.Fatalf("secret columns %v", got)
	}
	if got := cell(t, tab, 0, "Type"); got != "Opaque" {
		t.Fatalf("TYPE of creds %v", got)
	}
	if got := cell(t, tab, 0, "Data"); got != "2" {
		t.Fatalf("DATA of creds %v", got)
	}
}

func TestConfigMapsThroughTheAPI(t *testing.T) {
	api := newAPI(t, registry.Config{})
	ctx := context.Background()
	cms := api.client.CoreV1().ConfigMaps("default")
	created, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data:       map[string]string{"mode": "fast", "level": "3"},
		BinaryData: map[string][]byte{"blob": {0, 1, 2}},
		Immutable:  ptr(true),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Data["mode"] = "slow"
	if _, err := cms.Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("data change of an immutable configmap: %v, want Invalid", err)
	}
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Data: map[string]string{"a/b": "x"}}, metav1.CreateOptions{})
	if c, ok := statusCause(err, "data"); !ok || !strings.Contains(c.Message, "a/b") {
		t.Fatalf("bad key: %v, want 422 on data naming a/b", err)
	}
	tab := table(t, api.url+"/api/v1/namespaces/default/configmaps")
	if got := columnNames(tab, true); !equal(got, []string{"NAME", "DATA", "AGE"}) {
		t.Fatalf("configmap columns %v", got)
	}
	if got := cell(t, tab, 0, "Data"); got != "3" {
		t.Fatalf("DATA %v", got)
	}
	// Discovery lists the short name kubectl get cm resolves.
	res, err := api.client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range res.APIResources {
		if r.Name == "configmaps" {
			data, _ := json.Marshal(r.ShortNames)
			found = string(data) == `["cm"]`
		}
	}
	if !found {
		t.Fatalf("configmaps with short name cm not in discovery: %+v", res.APIResources)
	}
}

func ptr[T any](v T) *T { return &v }
