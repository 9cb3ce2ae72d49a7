package ipalloc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/storage"
)

// Errors of claims; callers turn them into API statuses naming the field.
var (
	// ErrAllocated means another owner holds the item.
	ErrAllocated = errors.New("provided value is already allocated")
	// ErrNotInRange means the item is outside the allocator's range.
	ErrNotInRange = errors.New("not in the valid range")
	// ErrFull means no free item is left anywhere in the range.
	ErrFull = errors.New("range is full")
)

// Store is the part of storage.Store the allocators use; *storage.Store satisfies it.
type Store interface {
	Get(ctx context.Context, key string) (storage.KV, error)
	List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error)
	Create(ctx context.Context, key string, value []byte) (int64, error)
	Delete(ctx context.Context, key string, expect int64) (int64, error)
}

// Owner is who holds a claim; it is stored as the claim key's value.
type Owner struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Claimed is when the claim was made; repair leaves young claims alone because
	// their object may still be on its way to storage.
	Claimed time.Time `json:"claimed"`
}

func (o Owner) String() string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// bands is the arithmetic of a range of size items split at lower: offsets [0, lower)
// are the static band, [lower, size) the dynamic band.
type bands struct {
	size  uint64
	lower uint64
}

// lowerBandSize is Kubernetes' min(max(minimum, size/step), maximum), with no lower band
// at all when the range is no larger than minimum.
func lowerBandSize(size, minimum, step, maximum uint64) uint64 {
	if size <= minimum {
		return 0
	}
	return min(max(minimum, size/step), maximum)
}

// claims is the etcd side shared by the IP and port allocators: items are offsets in a
// range, each claimed under prefix+name(offset).
type claims struct {
	store  Store
	prefix string
	bands  bands
	name   func(offset uint64) string
	parse  func(name string) (uint64, bool)
	clock  clock.PassiveClock

	mu  sync.Mutex
	rng *rand.Rand
}

// Options tune an allocator; the zero value is fine for production.
type Options struct {
	// Clock stamps claims; nil is the real clock.
	Clock clock.PassiveClock
	// Seed makes the random start of dynamic allocation reproducible in tests; 0 seeds
	// from the runtime's random source.
	Seed uint64
}

func newClaims(store Store, prefix string, b bands, o Options, name func(uint64) string, parse func(string) (uint64, bool)) *claims {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	seed := o.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &claims{store: store, prefix: prefix, bands: b, name: name, parse: parse, clock: o.Clock,
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (c *claims) key(off uint64) string { return c.prefix + c.name(off) }

func (c *claims) randomIn(lo, hi uint64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return lo + c.rng.Uint64N(hi-lo)
}

// claim takes offset off for owner. A claim the same owner (by UID) already holds
// succeeds again, so retried writes are idempotent.
func (c *claims) claim(ctx context.Context, off uint64, owner Owner) error {
	owner.Claimed = c.clock.Now().UTC()
	value, err := json.Marshal(owner)
	if err != nil {
		return err
	}
	_, err = c.store.Create(ctx, c.key(off), value)
	if !errors.Is(err, storage.ErrExists) {
		return err
	}
	holder, _, err := c.holder(ctx, off)
	if errors.Is(err, storage.ErrNotFound) {
		// Released between our create and our read: try once more.
		if _, err := c.store.Create(ctx, c.key(off), value); !errors.Is(err, storage.ErrExists) {
			return err
		}
		return ErrAllocated
	}
	if err != nil {
		return err
	}
	if holder.UID != "" && holder.UID == owner.UID {
		return nil
	}
	return ErrAllocated
}

// holder reads who holds off, with the key's revision for a conditional delete.
func (c *claims) holder(ctx context.Context, off uint64) (Owner, int64, error) {
	kv, err := c.store.Get(ctx, c.key(off))
	if err != nil {
		return Owner{}, 0, err
	}
	var o Owner
	if err := json.Unmarshal(kv.Value, &o); err != nil {
		return Owner{}, kv.Revision, fmt.Errorf("claim %s is corrupt: %w", kv.Key, err)
	}
	return o, kv.Revision, nil
}

// release frees off if owner holds it; a claim held by someone else, or none, is left
// as it is and is not an error.
func (c *claims) release(ctx context.Context, off uint64, owner Owner) error {
	holder, rev, err := c.holder(ctx, off)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if holder.UID != owner.UID {
		return nil
	}
	_, err = c.store.Delete(ctx, c.key(off), rev)
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		// Gone already, or rewritten by another owner after a release: not ours.
		return nil
	}
	return err
}

// held lists the current claims by offset.
func (c *claims) held(ctx context.Context) (map[uint64]Owner, error) {
	res, err := c.store.List(ctx, c.prefix, storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]Owner, len(res.Items))
	for _, kv := range res.Items {
		off, ok := c.parse(strings.TrimPrefix(kv.Key, c.prefix))
		if !ok {
			continue
		}
		var o Owner
		_ = json.Unmarshal(kv.Value, &o)
		out[off] = o
	}
	return out, nil
}

// allocate claims a free offset for owner: a random start in the upper band with a
// linear probe, then the same in the lower band. A claim owner already holds that is
// not in inUse (left behind by a write that failed after claiming) is reused first.
func (c *claims) allocate(ctx context.Context, owner Owner, inUse map[uint64]bool) (uint64, error) {
	taken, err := c.held(ctx)
	if err != nil {
		return 0, err
	}
	for off, o := range taken {
		if o.UID != "" && o.UID == owner.UID && !inUse[off] && off < c.bands.size {
			return off, nil
		}
	}
	for _, band := range [][2]uint64{{c.bands.lower, c.bands.size}, {0, c.bands.lower}} {
		lo, hi := band[0], band[1]
		if lo >= hi {
			continue
		}
		start := c.randomIn(lo, hi)
		for i := uint64(0); i < hi-lo; i++ {
			off := lo + (start-lo+i)%(hi-lo)
			if _, ok := taken[off]; ok || inUse[off] {
				continue
			}
			err := c.claim(ctx, off, owner)
			if errors.Is(err, ErrAllocated) {
				// Another replica won this one since we listed.
				continue
			}
			if err != nil {
				return 0, err
			}
			return off, nil
		}
	}
	return 0, ErrFull
}

var _ Store = (*storage.Store)(nil)
