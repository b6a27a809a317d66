package artifact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"
)

// ErrURLMalformed means a signed URL's expires or sig parameter is missing or unparsable.
var ErrURLMalformed = errors.New("artifact: malformed signed URL")

// ErrURLSignature means a signed URL's signature does not match its key and expiry.
var ErrURLSignature = errors.New("artifact: bad URL signature")

// ErrURLExpired means a correctly signed URL is past its expiry.
var ErrURLExpired = errors.New("artifact: signed URL expired")

// URLSigner signs and verifies the time-limited artifact URLs of the local
// driver with HMAC-SHA256. The zero value verifies nothing.
type URLSigner struct {
	key []byte
}

// NewURLSigner returns a signer using a copy of key, which should be at least 32 random bytes.
func NewURLSigner(key []byte) URLSigner {
	return URLSigner{key: append([]byte(nil), key...)}
}

// Sign returns the hex HMAC-SHA256 of "key\nexpires" with expires in Unix seconds.
func (s URLSigner) Sign(key string, expires time.Time) string {
	return hex.EncodeToString(s.mac(key, strconv.FormatInt(expires.Unix(), 10)))
}

func (s URLSigner) mac(key, expires string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(key))
	m.Write([]byte{'\n'})
	m.Write([]byte(expires))
	return m.Sum(nil)
}

// Verify checks sig for key and expires (Unix seconds, decimal) at time now;
// it returns ErrURLMalformed, ErrURLSignature or ErrURLExpired.
func (s URLSigner) Verify(key, expires, sig string, now time.Time) error {
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || strconv.FormatInt(exp, 10) != expires {
		// The round trip refuses "+1", "01" and the like, which would verify
		// against a different string from the one that was signed.
		return ErrURLMalformed
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return ErrURLMalformed
	}
	if len(s.key) == 0 || !hmac.Equal(got, s.mac(key, expires)) {
		return ErrURLSignature
	}
	// Checked after the signature so that only authentic URLs learn they expired.
	if !now.Before(time.Unix(exp, 0)) {
		return ErrURLExpired
	}
	return nil
}
