package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"time"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/auth/authapi"
	"github.com/plinth/plinth/control/storage"
)

// tokenKeyPrefix is where tokens live under the store's prefix. "plinth" has no dot, so
// it cannot collide with an API group's prefix (/core/... or /<group.with.dots>/...).
const tokenKeyPrefix = "/plinth/bootstraptokens/"

// Errors of the token store; the handler and the authenticator turn them into statuses.
var (
	ErrTokenNotFound = errors.New("bootstrap token not found")
	ErrTokenExpired  = errors.New("bootstrap token expired")
	ErrTokenInvalid  = errors.New("bootstrap token secret does not match")
)

// storedToken is the etcd record. The secret is kept only as its SHA-256: 16 random
// characters of [a-z0-9] carry about 82 bits, too many to guess from the hash, so a
// slow password hash would add nothing.
type storedToken struct {
	ID          string     `json:"id"`
	SecretHash  string     `json:"secretSHA256"`
	Description string     `json:"description,omitempty"`
	Created     time.Time  `json:"created"`
	Expires     *time.Time `json:"expires,omitempty"`
}

func (t storedToken) expired(now time.Time) bool {
	return t.Expires != nil && !now.Before(*t.Expires)
}

func (t storedToken) public() authapi.BootstrapToken {
	return authapi.BootstrapToken{
		TypeMeta: authapi.TypeMeta{APIVersion: authapi.APIVersion, Kind: authapi.KindBootstrapToken},
		ID:       t.ID, Description: t.Description, Created: t.Created, Expires: t.Expires,
	}
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// TokenStore keeps bootstrap tokens in etcd.
type TokenStore struct {
	store  *storage.Store
	clock  clock.PassiveClock
	random io.Reader
	logger *slog.Logger
}

// NewTokenStore returns a store over s. A nil clock means the real one, a nil logger
// discards.
func NewTokenStore(s *storage.Store, clk clock.PassiveClock, logger *slog.Logger) *TokenStore {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &TokenStore{store: s, clock: clk, random: rand.Reader, logger: logger}
}

// maxDescription bounds what an admin may attach to a token.
const maxDescription = 256

// Create makes a token valid for ttl (0: forever) and returns it with its secret, which
// is never shown again.
func (s *TokenStore) Create(ctx context.Context, ttl time.Duration, description string) (authapi.BootstrapToken, error) {
	if ttl < 0 {
		return authapi.BootstrapToken{}, fmt.Errorf("ttl %v is negative: want a positive duration, or 0 for a token that never expires", ttl)
	}
	if len(description) > maxDescription {
		return authapi.BootstrapToken{}, fmt.Errorf("description is %d bytes long: at most %d are accepted", len(description), maxDescription)
	}
	now := s.clock.Now().UTC().Truncate(time.Second)
	// A random ID may already be taken; a few tries make a clash all but impossible.
	for attempt := 0; attempt < 5; attempt++ {
		tok, err := newToken(s.random)
		if err != nil {
			return authapi.BootstrapToken{}, err
		}
		rec := storedToken{ID: tok.ID, SecretHash: hashSecret(tok.Secret), Description: description, Created: now}
		if ttl > 0 {
			exp := now.Add(ttl)
			rec.Expires = &exp
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return authapi.BootstrapToken{}, err
		}
		_, err = s.store.Create(ctx, tokenKeyPrefix+tok.ID, data)
		if errors.Is(err, storage.ErrExists) {
			continue
		}
		if err != nil {
			return authapi.BootstrapToken{}, fmt.Errorf("store bootstrap token %s: %w", tok.ID, err)
		}
		out := rec.public()
		out.Token = tok.String()
		s.logger.Info("bootstrap token created", "id", tok.ID, "expires", rec.Expires, "description", description)
		return out, nil
	}
	return authapi.BootstrapToken{}, errors.New("could not find an unused bootstrap token ID in 5 attempts")
}

// newToken draws a token uniformly from the alphabet (rejection sampling, so no
// character is likelier than another).
func newToken(r io.Reader) (authapi.Token, error) {
	const n = authapi.TokenIDLength + authapi.TokenSecretLength
	const alphabet = authapi.TokenAlphabet
	// The largest multiple of len(alphabet) that fits a byte: bytes above it are redrawn.
	limit := byte(256 / len(alphabet) * len(alphabet))
	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)
	for len(out) < n {
		if _, err := io.ReadFull(r, buf); err != nil {
			return authapi.Token{}, fmt.Errorf("generate bootstrap token: %w", err)
		}
		for _, b := range buf {
			if b < limit && len(out) < n {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return authapi.Token{ID: string(out[:authapi.TokenIDLength]), Secret: string(out[authapi.TokenIDLength:])}, nil
}

// List returns every stored token, expired ones included until they are collected, by ID.
func (s *TokenStore) List(ctx context.Context) ([]authapi.BootstrapToken, error) {
	recs, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]authapi.BootstrapToken, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.rec.public())
	}
	return out, nil
}

type listedToken struct {
	rec      storedToken
	revision int64
}

func (s *TokenStore) list(ctx context.Context) ([]listedToken, error) {
	res, err := s.store.List(ctx, tokenKeyPrefix, storage.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list bootstrap tokens: %w", err)
	}
	out := make([]listedToken, 0, len(res.Items))
	for _, kv := range res.Items {
		var rec storedToken
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			s.logger.Warn("skipping a corrupt bootstrap token record", "key", kv.Key, "err", err)
			continue
		}
		out = append(out, listedToken{rec: rec, revision: kv.Revision})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rec.ID < out[j].rec.ID })
	return out, nil
}

// Delete removes the token with id; ErrTokenNotFound when there is none.
func (s *TokenStore) Delete(ctx context.Context, id string) error {
	if err := authapi.ValidateTokenID(id); err != nil {
		return err
	}
	_, err := s.store.Delete(ctx, tokenKeyPrefix+id, 0)
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrTokenNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("delete bootstrap token %s: %w", id, err)
	}
	s.logger.Info("bootstrap token deleted", "id", id)
	return nil
}

// Check verifies a presented token: it exists, its secret matches and it has not
// expired. Errors wrap ErrTokenNotFound, ErrTokenInvalid or ErrTokenExpired.
func (s *TokenStore) Check(ctx context.Context, tok authapi.Token) error {
	kv, err := s.store.Get(ctx, tokenKeyPrefix+tok.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("%w: %s (deleted, expired and collected, or never created)", ErrTokenNotFound, tok.ID)
	}
	if err != nil {
		return fmt.Errorf("read bootstrap token %s: %w", tok.ID, err)
	}
	var rec storedToken
	if err := json.Unmarshal(kv.Value, &rec); err != nil {
		return fmt.Errorf("bootstrap token %s: corrupt record: %w", tok.ID, err)
	}
	want, err := hex.DecodeString(rec.SecretHash)
	if err != nil {
		return fmt.Errorf("bootstrap token %s: corrupt secret hash: %w", tok.ID, err)
	}
	got := sha256.Sum256([]byte(tok.Secret))
	if subtle.ConstantTimeCompare(got[:], want) != 1 {
		return fmt.Errorf("%w: %s", ErrTokenInvalid, tok.ID)
	}
	if now := s.clock.Now(); rec.expired(now) {
		return fmt.Errorf("%w: %s expired at %s", ErrTokenExpired, tok.ID, rec.Expires.UTC().Format(time.RFC3339))
	}
	return nil
}

// CollectGarbage deletes expired tokens and returns how many it removed. A token
// replaced or deleted meanwhile is left alone (the delete compares revisions).
func (s *TokenStore) CollectGarbage(ctx context.Context) (int, error) {
	recs, err := s.list(ctx)
	if err != nil {
		return 0, err
	}
	now := s.clock.Now()
	removed := 0
	var errs []error
	for _, r := range recs {
		if !r.rec.expired(now) {
			continue
		}
		_, err := s.store.Delete(ctx, tokenKeyPrefix+r.rec.ID, r.revision)
		switch {
		case err == nil:
			removed++
			s.logger.Info("expired bootstrap token removed", "id", r.rec.ID, "expired", r.rec.Expires)
		case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrConflict):
		default:
			errs = append(errs, fmt.Errorf("delete expired bootstrap token %s: %w", r.rec.ID, err))
		}
	}
	return removed, errors.Join(errs...)
}

// RunGarbageCollector collects expired tokens every interval until ctx is done.
func (s *TokenStore) RunGarbageCollector(ctx context.Context, interval time.Duration, clk clock.WithTicker) {
	t := clk.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if _, err := s.CollectGarbage(ctx); err != nil && ctx.Err() == nil {
				s.logger.Warn("bootstrap token garbage collection failed; retrying next interval", "interval", interval, "err", err)
			}
		}
	}
}
