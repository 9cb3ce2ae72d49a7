package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/control/auth/authapi"
	"github.com/plinth/plinth/control/storage"
)

// newEtcdStore starts a real embedded etcd for the test.
func newEtcdStore(t *testing.T) *storage.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcd, err := storage.StartEmbedded(ctx, t.TempDir(), 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	return storage.New(etcd.Client, "/registry")
}

func TestTokenLifecycle(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	store := newEtcdStore(t)
	tokens := NewTokenStore(store, clk, nil)

	day, err := tokens.Create(ctx, 24*time.Hour, "for node-a")
	if err != nil {
		t.Fatal(err)
	}
	forever, err := tokens.Create(ctx, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := authapi.ParseToken(day.Token)
	if err != nil {
		t.Fatalf("created token %q does not parse: %v", day.Token, err)
	}
	if tok.ID != day.ID || day.Expires == nil || !day.Expires.Equal(clk.Now().Add(24*time.Hour)) || forever.Expires != nil {
		t.Fatalf("created %+v and %+v", day, forever)
	}

	// The secret is stored only as a hash.
	kv, err := store.Get(ctx, tokenKeyPrefix+tok.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(kv.Value, []byte(tok.Secret)) || !bytes.Contains(kv.Value, []byte(hashSecret(tok.Secret))) {
		t.Fatalf("stored record %s holds the secret or lacks its hash", kv.Value)
	}

	// Listing shows no secret.
	list, err := tokens.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("listed %d tokens, want 2", len(list))
	}
	for _, l := range list {
		if l.Token != "" {
			t.Fatalf("list shows the secret of %s", l.ID)
		}
	}

	if err := tokens.Check(ctx, tok); err != nil {
		t.Fatalf("fresh token refused: %v", err)
	}
	wrong := authapi.Token{ID: tok.ID, Secret: strings.Repeat("0", 16)}
	if err := tokens.Check(ctx, wrong); !errors.Is(err, ErrTokenInvalid) {
		t.Fatalf("wrong secret: %v, want ErrTokenInvalid", err)
	}
	if err := tokens.Check(ctx, authapi.Token{ID: "zzzzzz", Secret: tok.Secret}); !errors.Is(err, ErrTokenNotFound) {
		t.Fatalf("unknown ID: %v, want ErrTokenNotFound", err)
	}

	// Just before expiry it works; at expiry it does not, and garbage collection removes it.
	clk.Step(24*time.Hour - time.Second)
	if err := tokens.Check(ctx, tok); err != nil {
		t.Fatalf("token refused a second before expiry: %v", err)
	}
	if n, err := tokens.CollectGarbage(ctx); err != nil || n != 0 {
		t.Fatalf("garbage collection before expiry removed %d (%v)", n, err)
	}
	clk.Step(time.Second)
	if err := tokens.Check(ctx, tok); !errors.Is(err, ErrTokenExpired) {
		t.Fatalf("expired token: %v, want ErrTokenExpired", err)
	}
	if n, err := tokens.CollectGarbage(ctx); err != nil || n != 1 {
		t.Fatalf("garbage collection removed %d (%v), want 1", n, err)
	}
	if err := tokens.Check(ctx, tok); !errors.Is(err, ErrTokenNotFound) {
		t.Fatalf("collected token: %v, want ErrTokenNotFound", err)
	}

	// The token without expiry stays until deleted.
	ftok, _ := authapi.ParseToken(forever.Token)
	clk.Step(10 * 365 * 24 * time.Hour)
	if err := tokens.Check(ctx, ftok); err != nil {
		t.Fatalf("token without expiry refused: %v", err)
	}
	if err := tokens.Delete(ctx, ftok.ID); err != nil {
		t.Fatal(err)
	}
	if err := tokens.Check(ctx, ftok); !errors.Is(err, ErrTokenNotFound) {
		t.Fatalf("deleted token: %v, want ErrTokenNotFound", err)
	}
	if err := tokens.Delete(ctx, ftok.ID); !errors.Is(err, ErrTokenNotFound) {
		t.Fatalf("second delete: %v, want ErrTokenNotFound", err)
	}
	if _, err := tokens.Create(ctx, -time.Second, ""); err == nil {
		t.Fatal("negative ttl accepted")
	}
}

func TestTokenGarbageCollectorRuns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Now())
	tokens := NewTokenStore(newEtcdStore(t), clk, nil)
	if _, err := tokens.Create(ctx, time.Minute, "short"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tokens.RunGarbageCollector(ctx, time.Hour, clk)
	}()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := tokens.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("expired token still stored an interval later: %+v", list)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

// TestNewTokenShape checks generated tokens parse and use the whole alphabet.
func TestNewTokenShape(t *testing.T) {
	seen := map[rune]bool{}
	ids := map[string]bool{}
	for range 500 {
		tok, err := newToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := authapi.ParseToken(tok.String()); err != nil {
			t.Fatal(err)
		}
		ids[tok.ID] = true
		for _, c := range tok.String() {
			seen[c] = true
		}
	}
	if len(seen) != len(authapi.TokenAlphabet)+1 { // plus the dot
		t.Fatalf("500 tokens used %d distinct characters, want all %d", len(seen)-1, len(authapi.TokenAlphabet))
	}
	if len(ids) < 495 {
		t.Fatalf("500 tokens have only %d distinct IDs", len(ids))
	}
	// Bytes at or above the largest multiple of 36 are redrawn, not folded.
	tok, err := newToken(bytes.NewReader(append(bytes.Repeat([]byte{255}, 44), bytes.Repeat([]byte{0}, 44)...)))
	if err != nil || tok.String() != "aaaaaa.aaaaaaaaaaaaaaaa" {
		t.Fatalf("newToken with rejected bytes = %q, %v", tok, err)
	}
}
