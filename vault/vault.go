// Package vault derives Proctor's keys from PROCTOR_SECRET_KEY and seals secrets
// (agent API keys) with AES-256-GCM.
package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// MinSecretLength is the shortest accepted PROCTOR_SECRET_KEY.
const MinSecretLength = 32

// ErrDecrypt means a sealed value was tampered with or sealed under another key.
var ErrDecrypt = errors.New("vault: cannot decrypt: wrong key or corrupted data")

// Vault holds keys derived from one secret, each for a single purpose.
type Vault struct {
	aead    cipher.AEAD
	signing []byte
}

// New derives the keys from secret, which must be at least MinSecretLength characters.
func New(secret string) (*Vault, error) {
	if len(secret) < MinSecretLength {
		return nil, fmt.Errorf("vault: secret key must be at least %d characters, got %d", MinSecretLength, len(secret))
	}
	encKey, err := derive(secret, "proctor agent secrets v1")
	if err != nil {
		return nil, err
	}
	signKey, err := derive(secret, "proctor signed urls v1")
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return &Vault{aead: aead, signing: signKey}, nil
}

func derive(secret, purpose string) ([]byte, error) {
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, purpose, 32)
	if err != nil {
		return nil, fmt.Errorf("vault: derive %s key: %w", purpose, err)
	}
	return key, nil
}

// SigningKey returns the HMAC key used to sign artifact URLs.
func (v *Vault) SigningKey() []byte { return v.signing }

// Seal encrypts plaintext bound to context (for example "agent:42"), so a sealed
// value copied onto another row does not decrypt there.
func (v *Vault) Seal(plaintext []byte, context string) ([]byte, error) {
	nonce := make([]byte, v.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("vault: nonce: %w", err)
	}
	return v.aead.Seal(nonce, nonce, plaintext, []byte(context)), nil
}

// Open decrypts a value produced by Seal with the same context; ErrDecrypt otherwise.
func (v *Vault) Open(sealed []byte, context string) ([]byte, error) {
	n := v.aead.NonceSize()
	if len(sealed) < n+v.aead.Overhead() {
		return nil, ErrDecrypt
	}
	plain, err := v.aead.Open(nil, sealed[:n], sealed[n:], []byte(context))
	if err != nil {
		return nil, ErrDecrypt
	}
	return plain, nil
}
