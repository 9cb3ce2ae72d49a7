package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/storage"
)

// TestUpdateAtCachedRevisionStillRefusesStaleWrites: an update naming the revision the
// object cache holds starts from the cached copy without reading etcd. When someone
// else (here a write straight to etcd, as another control replica would make) has
// changed the object since, the update must still get 409 and the other write must
// stand; an update naming the new revision then succeeds.
func TestUpdateAtCachedRevisionStillRefusesStaleWrites(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	leases := ts.client.CoordinationV1().Leases("default")
	holder := "node-a"
	created, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "l"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Another replica renews the Lease behind this server's back.
	const key = "/coordination.k8s.io/leases/default/l"
	kv, err := ts.store.Get(ctx, key)
	if err != nil {
		t.Fatalf("the Lease is not at %s: %v", key, err)
	}
	if strconv.FormatInt(kv.Revision, 10) != created.ResourceVersion {
		t.Fatalf("stored revision %d, created resourceVersion %s", kv.Revision, created.ResourceVersion)
	}
	newRev := renewBehindTheServer(ctx, t, ts, kv, "node-b")

	stale := created.DeepCopy()
	mine := "node-c"
	stale.Spec.HolderIdentity = &mine
	if _, err := leases.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update at the superseded revision %s: got %v, want a conflict", created.ResourceVersion, err)
	}
	got, err := leases.Get(ctx, "l", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *got.Spec.HolderIdentity != "node-b" || got.ResourceVersion != strconv.FormatInt(newRev, 10) {
		t.Fatalf("after the refused update: holder %q at %s, want node-b at %d", *got.Spec.HolderIdentity, got.ResourceVersion, newRev)
	}

	got.Spec.HolderIdentity = &mine
	updated, err := leases.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update at the current revision: %v", err)
	}
	// And again from the revision that update left (the cached path).
	updated.Spec.LeaseDurationSeconds = new(int32(40))
	again, err := leases.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update at the revision of the last update: %v", err)
	}
	if *again.Spec.HolderIdentity != "node-c" || *again.Spec.LeaseDurationSeconds != 40 || again.UID != created.UID {
		t.Errorf("after two updates: %+v, uid %s (created %s)", again.Spec, again.UID, created.UID)
	}
}

// TestReadAtResourceVersionZeroFollowsOtherWriters: reads at resourceVersion=0 are
// served from memory, and a change or deletion made behind this server's back (as
// another control replica would) shows in them once etcd's watch delivers it, without
// any read through this server in between.
func TestReadAtResourceVersionZeroFollowsOtherWriters(t *testing.T) {
	ts := newTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	leases := ts.client.CoordinationV1().Leases("default")
	holder := "node-a"
	if _, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "l"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	anyVersion := metav1.GetOptions{ResourceVersion: "0"}
	if _, err := leases.Get(ctx, "l", anyVersion); err != nil {
		t.Fatal(err)
	}

	const key = "/coordination.k8s.io/leases/default/l"
	kv, err := ts.store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	newRev := renewBehindTheServer(ctx, t, ts, kv, "node-b")
	waitFor(ctx, t, "a read at resourceVersion=0 to show the other replica's write", func() (bool, string) {
		got, err := leases.Get(ctx, "l", anyVersion)
		if err != nil {
			return false, err.Error()
		}
		return got.ResourceVersion == strconv.FormatInt(newRev, 10) && *got.Spec.HolderIdentity == "node-b",
			"holder " + *got.Spec.HolderIdentity + " at " + got.ResourceVersion
	})

	if _, err := ts.store.Delete(ctx, key, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "a read at resourceVersion=0 to find the Lease gone", func() (bool, string) {
		_, err := leases.Get(ctx, "l", anyVersion)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// waitFor polls cond every 10 ms until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; last: %s", what, state)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// renewBehindTheServer writes the Lease stored in kv with holder as its holder straight
// to etcd, as another control replica would, and returns the new revision.
func renewBehindTheServer(ctx context.Context, t *testing.T, ts testServer, kv storage.KV, holder string) int64 {
	t.Helper()
	var other coordinationv1.Lease
	if err := json.Unmarshal(kv.Value, &other); err != nil {
		t.Fatal(err)
	}
	other.Spec.HolderIdentity = &holder
	data, err := json.Marshal(&other)
	if err != nil {
		t.Fatal(err)
	}
	newRev, _, err := ts.store.Update(ctx, kv.Key, data, kv.Revision)
	if err != nil {
		t.Fatal(err)
	}
	return newRev
}
