package models

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"
)

// SessionTTL is how long an idle session stays valid.
const SessionTTL = 30 * 24 * time.Hour

// NewToken returns a random URL-safe token with the given prefix and the
// SHA-256 hex of it, which is what the database stores.
func NewToken(prefix string) (plain, hash string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // the OS RNG never fails on Linux
	}
	plain = prefix + base64.RawURLEncoding.EncodeToString(b)
	return plain, HashToken(plain)
}

// HashToken returns the SHA-256 hex of a token.
func HashToken(plain string) string {
	sum := sha256.Sum256([]byte(plain))
	return hex.EncodeToString(sum[:])
}
