package storage

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// newTestStore starts a real embedded etcd in a temporary directory.
func newTestStore(t *testing.T) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := StartEmbedded(ctx, t.TempDir(), 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return New(e.Client, "/registry")
}

func TestCreateGetUpdateDelete(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()

	rev1, err := s.Create(ctx, "/core/nodes/a", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/core/nodes/a", []byte("again")); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: got %v, want ErrExists", err)
	}
	got, err := s.Get(ctx, "/core/nodes/a")
	if err != nil || string(got.Value) != "one" || got.Revision != rev1 {
		t.Fatalf("get = %+v, %v; want value one at revision %d", got, err, rev1)
	}
	rev2, _, err := s.Update(ctx, "/core/nodes/a", []byte("two"), rev1)
	if err != nil || rev2 <= rev1 {
		t.Fatalf("update = %d, %v", rev2, err)
	}
	_, cur, err := s.Update(ctx, "/core/nodes/a", []byte("stale"), rev1)
	if !errors.Is(err, ErrConflict) || string(cur.Value) != "two" {
		t.Fatalf("stale update = %v with current %q; want ErrConflict with current two", err, cur.Value)
	}
	if _, err := s.Delete(ctx, "/core/nodes/a", rev1); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale delete: %v, want ErrConflict", err)
	}
	if _, err := s.Delete(ctx, "/core/nodes/a", rev2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "/core/nodes/a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, _, err := s.Update(ctx, "/core/nodes/a", []byte("x"), rev2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update after delete: %v", err)
	}
}

func TestListPagesAtOneRevision(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	for i := range 5 {
		if _, err := s.Create(ctx, fmt.Sprintf("/core/nodes/n%d", i), []byte{byte('0' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	// A key that shares the prefix string but not the directory must not be listed.
	if _, err := s.Create(ctx, "/core/nodesx/other", []byte("x")); err != nil {
		t.Fatal(err)
	}
	page, err := s.List(ctx, "/core/nodes/", ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || !page.More || page.Remaining != 3 {
		t.Fatalf("first page: %d items more=%v remaining=%d", len(page.Items), page.More, page.Remaining)
	}
	// A write after the first page must not show in later pages read at its revision.
	if _, err := s.Create(ctx, "/core/nodes/n22", []byte("late")); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range page.Items {
		keys = append(keys, kv.Key)
	}
	next := page
	for next.More {
		next, err = s.List(ctx, "/core/nodes/", ListOptions{Limit: 2, Revision: page.Revision, StartKey: next.Items[len(next.Items)-1].Key + "\x00"})
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range next.Items {
			keys = append(keys, kv.Key)
		}
	}
	want := "[/core/nodes/n0 /core/nodes/n1 /core/nodes/n2 /core/nodes/n3 /core/nodes/n4]"
	if fmt.Sprint(keys) != want {
		t.Fatalf("paged keys %v, want %s", keys, want)
	}
}

func TestWatchSeesChangesAndReportsCompaction(t *testing.T) {
	s := newTestStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := s.Watch(ctx, "/coordination.k8s.io/leases/", start)
	rev, err := s.Create(ctx, "/coordination.k8s.io/leases/ns/a", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Update(ctx, "/coordination.k8s.io/leases/ns/a", []byte("v2"), rev); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "/coordination.k8s.io/leases/ns/a", 0); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 3 {
		select {
		case e := <-events:
			switch e.Type {
			case EventPut:
				got = append(got, fmt.Sprintf("put created=%v %s", e.Created, e.KV.Value))
			case EventDelete:
				got = append(got, fmt.Sprintf("delete prev=%s", e.Prev.Value))
			case EventError:
				t.Fatal(e.Err)
			}
		case <-ctx.Done():
			t.Fatalf("timed out with events %v", got)
		}
	}
	want := "[put created=true v1 put created=false v2 delete prev=v2]"
	if fmt.Sprint(got) != want {
		t.Fatalf("events %v, want %s", got, want)
	}

	cur, _ := s.CurrentRevision(ctx)
	if err := s.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	old := s.Watch(ctx, "/coordination.k8s.io/leases/", start)
	for e := range old {
		if e.Type == EventError {
			if !errors.Is(e.Err, ErrCompacted) {
				t.Fatalf("watch from compacted revision: %v, want ErrCompacted", e.Err)
			}
			if _, err := s.List(ctx, "/coordination.k8s.io/leases/", ListOptions{Revision: start}); !errors.Is(err, ErrCompacted) {
				t.Fatalf("list at compacted revision: %v, want ErrCompacted", err)
			}
			return
		}
	}
	t.Fatal("watch from a compacted revision ended without an error event")
}

func TestRevisionsAndWatchChangesFollowKeysWithoutValues(t *testing.T) {
	s := newTestStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, err := s.Create(ctx, "/v1/nodes/a", []byte("A"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Create(ctx, "/v1/nodes/b", []byte("B"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/v1/pods/ns/p", []byte("P")); err != nil {
		t.Fatal(err)
	}
	revs, at, err := s.Revisions(ctx, "/v1/nodes/")
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 2 || revs["/v1/nodes/a"] != a || revs["/v1/nodes/b"] != b || at < b {
		t.Fatalf("Revisions = %v at %d; want a at %d and b at %d, read at %d or later", revs, at, a, b, b)
	}
	events := s.WatchChanges(ctx, "/v1/nodes/", at)
	next, _, err := s.Update(ctx, "/v1/nodes/a", []byte("A2"), a)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := s.Delete(ctx, "/v1/nodes/b", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		select {
		case e := <-events:
			if e.Type == EventError {
				t.Fatal(e.Err)
			}
			if e.Type == EventProgress {
				continue
			}
			if e.Prev != nil {
				t.Fatalf("WatchChanges gave a previous value: %+v", e)
			}
			got = append(got, fmt.Sprintf("%d %s@%d", e.Type, e.KV.Key, e.Revision))
		case <-ctx.Done():
			t.Fatalf("timed out with events %v", got)
		}
	}
	want := fmt.Sprintf("[%d /v1/nodes/a@%d %d /v1/nodes/b@%d]", EventPut, next, EventDelete, gone)
	if fmt.Sprint(got) != want {
		t.Fatalf("events %v, want %s", got, want)
	}
}
