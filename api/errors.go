package api

// ErrorResponse is every error answer of the API: {"error": {...}}.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody says what went wrong. Code is one of the models.E* codes and
// matches the HTTP status; Field names the input at fault, when one is.
type ErrorBody struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// Problems are every problem of input the server checked whole (a
	// candidate run's candidates, for one), each with its field; the first
	// is also Code, Field and Message. Absent when there is one problem.
	Problems []Problem `json:"problems,omitempty"`
}

// Problem is one problem of input checked whole. Field is empty when the
// problem is the input's as a whole.
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}
