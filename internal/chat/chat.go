// Package chat holds the request and response shapes of OpenAI-compatible
// chat-completions endpoints, shared by the built-in openai agent and the LLM
// judges (only the parts Proctor uses).
package chat

import "encoding/json"

// Request is a chat-completions request.
type Request struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	Temperature    *float64        `json:"temperature,omitempty"`
	MaxTokens      *int            `json:"max_tokens,omitempty"`
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
}

// ResponseFormat asks for a kind of reply, such as {"type": "json_object"}.
type ResponseFormat struct {
	Type string `json:"type"`
}

// Message is one message; Content is a string or a list of Parts.
type Message struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// Part is one part of a multi-part message: text or an image.
type Part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is an image part's address, often a data: URL.
type ImageURL struct {
	URL string `json:"url"`
}

// Response is a chat-completions response.
type Response struct {
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage"`
}

// Choice is one reply; Content is a string or a list of parts.
type Choice struct {
	Message struct {
		Content json.RawMessage `json:"content"`
		Refusal *string         `json:"refusal"`
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
}

// Usage is what a request cost in tokens.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}
