package service

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage/artifact"
)

func TestDigestReader(t *testing.T) {
	t.Parallel()
	body := []byte(strings.Repeat("part bytes ", 1000))
	sum := md5.Sum(body)

	t.Run("Match", func(t *testing.T) {
		d := newDigestReader(bytes.NewReader(body), int64(len(body)), sum[:])
		got, err := io.ReadAll(d)
		require.NoError(t, err)
		require.Equal(t, body, got)
		require.Equal(t, fmt.Sprintf("%x", sum), d.sum())
	})
	t.Run("NoDigest", func(t *testing.T) {
		got, err := io.ReadAll(newDigestReader(bytes.NewReader(body), 10, nil))
		require.NoError(t, err)
		require.Equal(t, body[:10], got, "exactly size bytes")
	})
	t.Run("Mismatch", func(t *testing.T) {
		bad := bytes.Clone(body)
		bad[500] ^= 1
		d := newDigestReader(bytes.NewReader(bad), int64(len(bad)), sum[:])
		got, err := io.ReadAll(d)
		require.ErrorIs(t, err, errPartDigest)
		require.Less(t, len(got), len(bad), "the reader never reaches the part's end")
		// However it is read, the last bytes are withheld.
		d = newDigestReader(bytes.NewReader(bad), int64(len(bad)), sum[:])
		n, err := io.ReadFull(d, make([]byte, len(bad)))
		require.ErrorIs(t, err, errPartDigest)
		require.Less(t, n, len(bad))
	})
}

func TestCheckParts(t *testing.T) {
	t.Parallel()
	s := &models.Submission{ID: 9, Size: 25, PartSize: 10}
	full := []artifact.Part{{Number: 1, Size: 10}, {Number: 2, Size: 10}, {Number: 3, Size: 5}, {Number: 4, Size: 1}}
	joined, err := checkParts(s, full)
	require.NoError(t, err)
	require.Equal(t, full[:3], joined, "parts beyond the declared size are left out")

	_, err = checkParts(s, []artifact.Part{{Number: 2, Size: 10}})
	require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
	require.Equal(t, "The upload of submission 9 is not complete: 2 parts are missing (1, 3). Send them, then complete it again.", models.ErrorMessage(err))
	_, err = checkParts(s, []artifact.Part{{Number: 1, Size: 10}, {Number: 2, Size: 9}})
	require.Equal(t, "The upload of submission 9 is not complete: part 3 is missing; part 2 has 9 bytes instead of 10. Send them, then complete it again.", models.ErrorMessage(err))
}

func TestCappedReader(t *testing.T) {
	t.Parallel()
	got, err := io.ReadAll(&cappedReader{r: strings.NewReader("12345"), left: 5})
	require.NoError(t, err)
	require.Equal(t, "12345", string(got))
	_, err = io.ReadAll(&cappedReader{r: strings.NewReader("123456"), left: 5})
	require.True(t, errors.Is(err, errStreamTooLarge))
}
