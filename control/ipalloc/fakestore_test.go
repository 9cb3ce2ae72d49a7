package ipalloc

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/plinth/plinth/control/storage"
)

// memStore is an in-memory Store with etcd's create-if-absent and revision semantics.
type memStore struct {
	mu   sync.Mutex
	rev  int64
	keys map[string]storage.KV
}

func newMemStore() *memStore { return &memStore{keys: map[string]storage.KV{}} }

func (m *memStore) Get(_ context.Context, key string) (storage.KV, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kv, ok := m.keys[key]
	if !ok {
		return storage.KV{}, storage.ErrNotFound
	}
	return kv, nil
}

func (m *memStore) List(_ context.Context, prefix string, _ storage.ListOptions) (storage.ListResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	res := storage.ListResult{Revision: m.rev}
	for k, kv := range m.keys {
		if strings.HasPrefix(k, prefix) {
			res.Items = append(res.Items, kv)
		}
	}
	sort.Slice(res.Items, func(i, j int) bool { return res.Items[i].Key < res.Items[j].Key })
	return res, nil
}

func (m *memStore) Create(_ context.Context, key string, value []byte) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[key]; ok {
		return 0, storage.ErrExists
	}
	m.rev++
	m.keys[key] = storage.KV{Key: key, Value: append([]byte(nil), value...), Revision: m.rev}
	return m.rev, nil
}

func (m *memStore) Delete(_ context.Context, key string, expect int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kv, ok := m.keys[key]
	if !ok {
		return 0, storage.ErrNotFound
	}
	if expect != 0 && kv.Revision != expect {
		return 0, storage.ErrConflict
	}
	m.rev++
	delete(m.keys, key)
	return m.rev, nil
}

func (m *memStore) count(prefix string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k := range m.keys {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}
