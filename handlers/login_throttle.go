package handlers

import (
	"sync"
	"time"
)

// Sign-in throttling. Guessing is slowed three ways, and nobody is locked
// out:
//
//   - an address has a number of attempts a minute, whatever the accounts;
//   - an address that has given an account's password wrong more than
//     pairFreeFailures times waits before its next try there, doubling from
//     one second up to pairMaxDelay;
//   - an account that has had more than accountFreeFailures wrong passwords,
//     from anywhere, makes every address that failed on it wait too,
//     doubling up to accountMaxDelay.
//
// An address that has not failed on the account (the owner at a new café)
// is never held by the account's failures, only by its own allowance, so
// an attacker cannot lock the owner out; the attacker's addresses each slow
// to one guess per accountMaxDelay at best. A right password forgets the
// account's failures. Failures older than failureMemory are forgotten.
const (
	pairFreeFailures    = 3
	pairMaxDelay        = 5 * time.Minute
	accountFreeFailures = 10
	accountMaxDelay     = 30 * time.Second
	failureMemory       = 15 * time.Minute
)

type loginThrottle struct {
	mu        sync.Mutex
	now       func() time.Time
	addresses *attemptLimiter
	accounts  map[string]*failures
	pairs     map[addressAccount]*failures
}

type addressAccount struct{ address, account string }

type failures struct {
	n    int
	last time.Time
}

func newLoginThrottle(perAddressPerMinute int, now func() time.Time) *loginThrottle {
	return &loginThrottle{
		now:       now,
		addresses: newAttemptLimiter(perAddressPerMinute, time.Minute, now),
		accounts:  map[string]*failures{},
		pairs:     map[addressAccount]*failures{},
	}
}

// check counts a sign-in attempt from address on account and returns how
// long the caller must wait before trying: 0 to go ahead.
func (t *loginThrottle) check(address, account string) time.Duration {
	if wait := t.addresses.allow(address); wait > 0 {
		return wait
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	pair := t.recent(t.pairs[addressAccount{address, account}], now)
	if pair == nil {
		return 0 // this address has not failed here: the account's failures do not hold it
	}
	delay := doubling(pair.n-pairFreeFailures, pairMaxDelay)
	if acc := t.recent(t.accounts[account], now); acc != nil {
		// Five more failures on the account double its delay.
		delay = max(delay, doubling((acc.n-accountFreeFailures+4)/5, accountMaxDelay))
	}
	if wait := pair.last.Add(delay).Sub(now); wait > 0 {
		return max(time.Second, wait.Round(time.Second))
	}
	return 0
}

// failed records a wrong password (or an unknown account) from address.
func (t *loginThrottle) failed(address, account string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.forgetStale(now)
	key := addressAccount{address, account}
	t.pairs[key] = t.count(t.pairs[key], now)
	t.accounts[account] = t.count(t.accounts[account], now)
}

// count adds a failure at now to f, started afresh when f is stale.
func (t *loginThrottle) count(f *failures, now time.Time) *failures {
	if f = t.recent(f, now); f == nil {
		f = &failures{}
	}
	f.n++
	f.last = now
	return f
}

// succeeded forgets the account's failures: its owner is in.
func (t *loginThrottle) succeeded(address, account string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.accounts, account)
	delete(t.pairs, addressAccount{address, account})
}

// recent returns f unless it is nil or older than failureMemory.
func (t *loginThrottle) recent(f *failures, now time.Time) *failures {
	if f == nil || now.Sub(f.last) > failureMemory {
		return nil
	}
	return f
}

// forgetStale drops old failures once many are tracked.
func (t *loginThrottle) forgetStale(now time.Time) {
	if len(t.pairs)+len(t.accounts) <= maxTrackedKeys {
		return
	}
	for k, f := range t.pairs {
		if t.recent(f, now) == nil {
			delete(t.pairs, k)
		}
	}
	for k, f := range t.accounts {
		if t.recent(f, now) == nil {
			delete(t.accounts, k)
		}
	}
}

// doubling is 0 for steps ≤ 0, then 1 s, 2 s, 4 s… up to ceiling.
func doubling(steps int, ceiling time.Duration) time.Duration {
	if steps <= 0 {
		return 0
	}
	if steps > 20 {
		return ceiling
	}
	return min(ceiling, time.Second<<(steps-1))
}
