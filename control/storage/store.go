package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Errors callers map onto Kubernetes API statuses.
var (
	ErrNotFound  = errors.New("storage: key not found")
	ErrExists    = errors.New("storage: key already exists")
	ErrConflict  = errors.New("storage: revision precondition failed")
	ErrCompacted = errors.New("storage: revision has been compacted")
)

// KV is one stored object with the revision that last modified it.
type KV struct {
	Key      string
	Value    []byte
	Revision int64
}

// Store reads and writes objects under one etcd key prefix.
type Store struct {
	client *clientv3.Client
	prefix string
}

// New returns a Store that keeps keys under prefix (for example "/registry").
func New(client *clientv3.Client, prefix string) *Store {
	return &Store{client: client, prefix: strings.TrimSuffix(prefix, "/")}
}

func (s *Store) full(key string) string { return s.prefix + key }

// Get returns the object at key.
func (s *Store) Get(ctx context.Context, key string) (KV, error) {
	resp, err := s.client.Get(ctx, s.full(key))
	if err != nil {
		return KV{}, fmt.Errorf("get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return KV{}, ErrNotFound
	}
	return s.kv(resp.Kvs[0]), nil
}

func (s *Store) kv(k *mvccpb.KeyValue) KV {
	return KV{Key: strings.TrimPrefix(string(k.Key), s.prefix), Value: k.Value, Revision: k.ModRevision}
}

// ListOptions select a page of keys under a prefix.
type ListOptions struct {
	// Limit is the page size; 0 means everything.
	Limit int64
	// StartKey continues a paginated list from this key (inclusive).
	StartKey string
	// Revision reads the list as of this revision; 0 means the latest.
	Revision int64
}

// ListResult is one page of a list.
type ListResult struct {
	Items []KV
	// Revision is the etcd revision the page was read at; later pages reuse it.
	Revision int64
	// More is true when keys remain after the last item.
	More bool
	// Remaining counts keys after this page, when More.
	Remaining int64
}

// List returns the objects whose keys start with prefix, in key order.
func (s *Store) List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error) {
	start := s.full(prefix)
	if opts.StartKey != "" {
		start = s.full(opts.StartKey)
	}
	end := clientv3.GetPrefixRangeEnd(s.full(prefix))
	ops := []clientv3.OpOption{clientv3.WithRange(end)}
	if opts.Limit > 0 {
		ops = append(ops, clientv3.WithLimit(opts.Limit))
	}
	if opts.Revision > 0 {
		ops = append(ops, clientv3.WithRev(opts.Revision))
	}
	resp, err := s.client.Get(ctx, start, ops...)
	if err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return ListResult{}, ErrCompacted
		}
		return ListResult{}, fmt.Errorf("list %s: %w", prefix, err)
	}
	res := ListResult{Revision: resp.Header.Revision, More: resp.More}
	if opts.Revision > 0 {
		res.Revision = opts.Revision
	}
	res.Items = make([]KV, 0, len(resp.Kvs))
	for _, k := range resp.Kvs {
		res.Items = append(res.Items, s.kv(k))
	}
	if resp.More {
		res.Remaining = resp.Count - int64(len(resp.Kvs))
	}
	return res, nil
}

// Revisions returns the mod revision of every key under prefix, and the revision they
// were read at, without reading any value.
func (s *Store) Revisions(ctx context.Context, prefix string) (map[string]int64, int64, error) {
	resp, err := s.client.Get(ctx, s.full(prefix), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, 0, fmt.Errorf("list keys under %s: %w", prefix, err)
	}
	out := make(map[string]int64, len(resp.Kvs))
	for _, k := range resp.Kvs {
		out[strings.TrimPrefix(string(k.Key), s.prefix)] = k.ModRevision
	}
	return out, resp.Header.Revision, nil
}

// Create stores value at key if no object is there, and returns the new revision.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	return s.CreateWithTTL(ctx, key, value, 0)
}

// CreateWithTTL is Create for an object etcd removes after ttl (through a lease);
// updates keep the lease. A ttl of zero means no lifetime.
func (s *Store) CreateWithTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	k := s.full(key)
	var opts []clientv3.OpOption
	if ttl > 0 {
		secs := int64((ttl + time.Second - 1) / time.Second)
		lease, err := s.client.Grant(ctx, secs)
		if err != nil {
			return 0, fmt.Errorf("create %s: lease for %s: %w", key, ttl, err)
		}
		opts = append(opts, clientv3.WithLease(lease.ID))
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(value), opts...)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", key, err)
	}
	if !resp.Succeeded {
		return 0, ErrExists
	}
	return resp.Header.Revision, nil
}

// Update replaces the object at key if it was last modified at revision expect, and
// returns the new revision. It fails with ErrNotFound when the key is gone and with
// ErrConflict, plus the current object, when someone else wrote it since.
func (s *Store) Update(ctx context.Context, key string, value []byte, expect int64) (int64, KV, error) {
	k := s.full(key)
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k), "=", expect)).
		// An object with a lifetime keeps it across updates.
		Then(clientv3.OpPut(k, string(value), clientv3.WithIgnoreLease())).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return 0, KV{}, fmt.Errorf("update %s: %w", key, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, KV{}, nil
	}
	got := resp.Responses[0].GetResponseRange()
	if got == nil || len(got.Kvs) == 0 {
		return 0, KV{}, ErrNotFound
	}
	return 0, s.kv(got.Kvs[0]), ErrConflict
}

// Delete removes the object at key if it was last modified at revision expect (0 means
// any revision), and returns the revision of the deletion.
func (s *Store) Delete(ctx context.Context, key string, expect int64) (int64, error) {
	k := s.full(key)
	cmp := clientv3.Compare(clientv3.CreateRevision(k), ">", 0)
	if expect != 0 {
		cmp = clientv3.Compare(clientv3.ModRevision(k), "=", expect)
	}
	resp, err := s.client.Txn(ctx).If(cmp).Then(clientv3.OpDelete(k)).Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return 0, fmt.Errorf("delete %s: %w", key, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	got := resp.Responses[0].GetResponseRange()
	if got == nil || len(got.Kvs) == 0 {
		return 0, ErrNotFound
	}
	return 0, ErrConflict
}

// CurrentRevision returns etcd's latest revision.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, s.full("/"), clientv3.WithCountOnly(), clientv3.WithLimit(1))
	if err != nil {
		return 0, fmt.Errorf("read current revision: %w", err)
	}
	return resp.Header.Revision, nil
}
