package nodelifecycle

import (
	"testing"
	"time"
)

func TestTokenBucketOneEveryTenSecondsAtPointOne(t *testing.T) {
	b := newTokenBucket(0.1, t0)
	if !b.take(t0) {
		t.Fatal("a new bucket refused its first token")
	}
	if b.take(t0) {
		t.Fatal("burst of one let a second token through at once")
	}
	// Refills in small steps still add up to a whole token at exactly 10 s.
	for i := 1; i <= 9; i++ {
		if b.take(t0.Add(time.Duration(i) * time.Second)) {
			t.Fatalf("token available after %d s, want only after 10 s", i)
		}
	}
	if at, ok := b.ready(t0.Add(9 * time.Second)); !ok || !at.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("ready = %v, %v; want t0+10s", at, ok)
	}
	if !b.take(t0.Add(10 * time.Second)) {
		t.Fatal("no token at 10 s")
	}
	// A long idle time does not bank more than one token.
	if !b.take(t0.Add(time.Hour)) || b.take(t0.Add(time.Hour)) {
		t.Fatal("an idle bucket should hold exactly one token")
	}
}

func TestTokenBucketRateChanges(t *testing.T) {
	b := newTokenBucket(0.1, t0)
	b.take(t0)
	b.setRate(0, t0.Add(5*time.Second)) // half a token earned
	if _, ok := b.ready(t0.Add(5 * time.Second)); ok {
		t.Fatal("a stopped bucket reports a time it will be ready")
	}
	if b.take(t0.Add(time.Hour)) {
		t.Fatal("a stopped bucket let a token through")
	}
	// Back at 0.01/s: the half token is kept, the other half takes 50 s.
	b.setRate(0.01, t0.Add(time.Hour))
	at, ok := b.ready(t0.Add(time.Hour))
	if want := t0.Add(time.Hour + 50*time.Second); !ok || !at.Equal(want) {
		t.Fatalf("ready = %v, %v; want %v", at, ok, want)
	}
	if b.take(at.Add(-time.Millisecond)) || !b.take(at) {
		t.Fatal("token not available exactly when ready said")
	}

	// A full bucket stopped and restarted still holds its token, and a stopped bucket
	// refuses even that token.
	full := newTokenBucket(0.1, t0)
	full.setRate(0, t0)
	if full.take(t0) {
		t.Fatal("a stopped full bucket let its token through")
	}
	full.setRate(0.1, t0.Add(time.Minute))
	if !full.take(t0.Add(time.Minute)) {
		t.Fatal("restarted full bucket lost its token")
	}
}
