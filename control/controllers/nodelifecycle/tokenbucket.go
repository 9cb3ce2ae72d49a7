package nodelifecycle

import (
	"math"
	"time"
)

// tokenBucket limits how fast a zone's nodes get NoExecute taints. It holds at most one
// token (the reference's burst of one), so a rate of 0.1 lets one node through, then one
// every 10 s. It reads no clock: every call passes the controller's time, so a fake
// clock drives it in tests.
//
// The bucket starts full: the first node of a zone is tainted as soon as it is due.
type tokenBucket struct {
	rate   float64 // tokens per second; 0 lets nothing through
	tokens float64 // at most burst
	last   time.Time
}

const (
	tokenBurst = 1.0
	// tokenSlack absorbs float rounding of many small refills, so a token earned over
	// exactly its interval in several steps counts as whole.
	tokenSlack = 1e-9
)

func newTokenBucket(rate float64, now time.Time) *tokenBucket {
	return &tokenBucket{rate: rate, tokens: tokenBurst, last: now}
}

// refill adds the tokens earned since the last call at the current rate. Time that goes
// backwards earns nothing.
func (b *tokenBucket) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = math.Min(tokenBurst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
}

// setRate changes the rate from now on; tokens earned so far are kept, so switching a
// zone back and forth neither grants nor loses a node.
func (b *tokenBucket) setRate(rate float64, now time.Time) {
	b.refill(now)
	b.rate = rate
}

// take spends one token if there is one. A rate of 0 refuses even a token left over
// from before: a stopped zone taints nothing.
func (b *tokenBucket) take(now time.Time) bool {
	b.refill(now)
	if b.rate <= 0 || b.tokens < 1-tokenSlack {
		return false
	}
	b.tokens = math.Max(0, b.tokens-1)
	return true
}

// ready is the earliest time take can succeed; ok is false at a rate of 0.
func (b *tokenBucket) ready(now time.Time) (at time.Time, ok bool) {
	if b.rate <= 0 {
		return time.Time{}, false
	}
	b.refill(now)
	if b.tokens >= 1-tokenSlack {
		return now, true
	}
	// The nearest nanosecond, moved later until the token is whole then, so a timer
	// set for it never fires a hair early.
	wait := time.Duration(math.Round((1 - b.tokens) / b.rate * float64(time.Second)))
	for b.tokens+wait.Seconds()*b.rate < 1-tokenSlack {
		wait++
	}
	return now.Add(wait), true
}
