package har

import (
	"io"

	"proctor/models"
)

// Requests reads the requests of the HAR in r, one entry at a time and
// without their bodies, in file order: what the timeline lists. Entries
// without a readable start time are left out, since they cannot be placed on
// a step; a log without entries has no requests. A document that is not a
// HAR is an *Error.
func Requests(r io.Reader) ([]models.NetworkRequest, error) {
	var out []models.NetworkRequest
	_, err := walk(r, Options{}, nil, func(raw *rawEntry) error {
		var e struct {
			StartedDateTime string  `json:"startedDateTime"`
			Time            float64 `json:"time"`
			Request         struct {
				Method string `json:"method"`
				URL    string `json:"url"`
			} `json:"request"`
			Response *struct {
				Status  int `json:"status"`
				Content struct {
					MimeType string `json:"mimeType"`
				} `json:"content"`
			} `json:"response"`
		}
		if err := raw.unmarshal(&e); err != nil {
			return err
		}
		started, ok := startTime(e.StartedDateTime)
		if !ok {
			return nil
		}
		req := models.NetworkRequest{Started: started, Method: e.Request.Method, URL: e.Request.URL, DurationMS: max(e.Time, 0)}
		if e.Response != nil {
			req.Status, req.MIMEType = e.Response.Status, e.Response.Content.MimeType
		}
		out = append(out, req)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
