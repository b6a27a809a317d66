package models_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestParseHTTPURL(t *testing.T) {
	t.Parallel()
	u, err := models.ParseHTTPURL(" HTTPS://Shop.test:7770/x ", "site URL")
	require.NoError(t, err)
	require.Equal(t, "https", u.Scheme)
	require.Equal(t, "Shop.test", u.Hostname())

	for raw, want := range map[string]string{
		"shop.test/x":         "must start with http:// or https://",
		"ftp://shop.test":     `must use http or https, not "ftp"`,
		"javascript:alert(1)": `not "javascript"`,
		"http://":             "has no host",
		"http://:8080/":       "has no host",
		"http:opaque":         "has no host",
		"http://a b.test/%zz": "cannot be parsed",
	} {
		_, err := models.ParseHTTPURL(raw, "site URL")
		require.Equal(t, models.EINVALID, models.ErrorCode(err), raw)
		require.Empty(t, models.ErrorField(err), "callers attach their field")
		require.Contains(t, models.ErrorMessage(err), "is not an http or https URL: it ", raw)
		require.Contains(t, models.ErrorMessage(err), want, raw)
	}

	_, err = models.ParseHTTPURL("https://user:s3cret@shop.test/x", "site URL")
	require.Equal(t, models.EINVALID, models.ErrorCode(err))
	require.Equal(t, "credentials in the site URL are not allowed", models.ErrorMessage(err))
}
