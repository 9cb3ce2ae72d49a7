package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/registry"
	"github.com/plinth/plinth/control/storage"
)

// userByToken makes the bearer token the user: "admin" is in system:masters, any other
// name is a node.
type userByToken struct{}

func (userByToken) Authenticate(req *http.Request) (apiserver.User, bool, error) {
	name, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok:
		return apiserver.User{}, false, nil
	case name == "admin":
		return apiserver.User{Name: "admin", Groups: []string{"system:masters"}}, true, nil
	}
	return apiserver.User{Name: "system:node:" + name, Groups: []string{"system:nodes"}}, true, nil
}

// holdCreate keeps the create of the node named `hold` inside the server, holding its
// in-flight slot, until release is closed; entered is closed when it gets there.
type holdCreate struct {
	hold    string
	entered chan struct{}
	release chan struct{}
}

func (h holdCreate) Admit(ctx context.Context, a apiserver.Attributes, obj, _ runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil || a.Verb != "create" || m.GetName() != h.hold {
		return nil
	}
	close(h.entered)
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return nil
}

func TestInflightLimitAnswers429ButNotToWatchesOrMasters(t *testing.T) {
	hold := holdCreate{hold: "held", entered: make(chan struct{}), release: make(chan struct{})}
	s := apitest.Start(t, apitest.Options{
		Resources:      func(*storage.Store) ([]*apiserver.Resource, error) { return registry.All(), nil },
		Authenticators: []apiserver.Authenticator{userByToken{}},
		Admitters:      []apiserver.Admitter{hold},
		Inflight:       apiserver.InflightLimits{ReadOnly: 1, Mutating: 1},
	})
	do := func(token, method, path string, body any) *http.Response {
		t.Helper()
		var data []byte
		if body != nil {
			data = mustJSON(t, body)
		}
		req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	node := func(name string) *corev1.Node {
		return &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	}

	// One create holds the only mutating slot.
	heldDone := make(chan int)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/v1/nodes", bytes.NewReader(mustJSON(t, node("held"))))
		req.Header.Set("Authorization", "Bearer held")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			heldDone <- 0
			return
		}
		resp.Body.Close()
		heldDone <- resp.StatusCode
	}()
	<-hold.entered

	resp := do("n2", http.MethodPost, "/api/v1/nodes", node("n2"))
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("create over the mutating limit: %d, want 429", resp.StatusCode)
	}
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	var status metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		t.Fatal(err)
	}
	if status.Reason != metav1.StatusReasonTooManyRequests || status.Details == nil || status.Details.RetryAfterSeconds != 1 {
		t.Errorf("status %+v, want reason TooManyRequests with retryAfterSeconds 1", status)
	}
	if !apierrors.IsTooManyRequests(apierrors.FromObject(&status)) {
		t.Errorf("client-go does not read %+v as TooManyRequests", status)
	}

	// Reads have their own limit.
	if resp := do("n2", http.MethodGet, "/api/v1/nodes", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("list while writes are full: %d, want 200", resp.StatusCode)
	}
	// Watches hold no slot: two open at once under a read-only limit of 1, and a list
	// beside them, are all served.
	for range 2 {
		if resp := do("n2", http.MethodGet, "/api/v1/nodes?watch=true", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("watch with the read limit 1: %d, want 200", resp.StatusCode)
		}
	}
	if resp := do("n2", http.MethodGet, "/api/v1/nodes", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("list beside two open watches: %d, want 200", resp.StatusCode)
	}
	// system:masters (the control loops, leader election) is served while writes are full.
	if resp := do("admin", http.MethodPost, "/api/v1/nodes", node("by-admin")); resp.StatusCode != http.StatusCreated {
		t.Errorf("create by system:masters while writes are full: %d, want 201", resp.StatusCode)
	}

	close(hold.release)
	if code := <-heldDone; code != http.StatusCreated {
		t.Fatalf("held create: %d, want 201", code)
	}
	if resp := do("n2", http.MethodPost, "/api/v1/nodes", node("n2")); resp.StatusCode != http.StatusCreated {
		t.Errorf("create once the slot is free: %d, want 201", resp.StatusCode)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
