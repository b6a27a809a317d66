package mcpref

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"proctor/internal/testenv"
)

// rootOrSkip returns the repository root, or skips (fails under
// PROCTOR_TEST_REQUIRE=browser) when node or the npm program at rel is
// missing.
func rootOrSkip(t *testing.T, rel string) string {
	t.Helper()
	root, err := FindRoot(".")
	require.NoError(t, err)
	_, err = Node()
	if err == nil {
		_, err = installed(root, rel)
	}
	why := ""
	if err != nil {
		why = "MCP reference programs: " + err.Error()
	}
	testenv.SkipUnlessAvailable(t, "browser", err == nil, why)
	return root
}

func TestPlaywrightMCPTools(t *testing.T) {
	t.Parallel()
	root := rootOrSkip(t, PlaywrightMCPPath)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scaled(t, 60*time.Second))
	defer cancel()

	tools, err := PlaywrightMCPTools(ctx, root)
	require.NoError(t, err)
	byName := map[string]*mcp.Tool{}
	for _, tool := range tools {
		byName[tool.Name] = tool
	}
	for _, name := range []string{
		"browser_click", "browser_type", "browser_snapshot", "browser_navigate",
		"browser_tabs", "browser_wait_for", "browser_take_screenshot",
		"browser_select_option", "browser_press_key", "browser_hover",
		"browser_navigate_back",
		// Only with --caps=vision: proves the capabilities were turned on.
		"browser_mouse_click_xy",
	} {
		tool, ok := byName[name]
		if !assert.True(t, ok, "tool %s missing from Playwright MCP's tools/list (%d tools)", name, len(tools)) {
			continue
		}
		schema, ok := tool.InputSchema.(map[string]any)
		if assert.True(t, ok, "%s: input schema is %T, want a JSON object", name, tool.InputSchema) {
			assert.Equal(t, "object", schema["type"], "%s: input schema type", name)
		}
	}
}

// echoServer starts a streamable-HTTP MCP server with one tool, echo, that
// answers only requests carrying "Authorization: Bearer <token>".
func echoServer(t *testing.T, token string) string {
	t.Helper()
	type echoArgs struct {
		Text string `json:"text" jsonschema:"the text to send back"`
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// inspect runs the Inspector CLI with args after the command prefix and
// returns its stdout, stderr and error.
func inspect(t *testing.T, root string, args ...string) (stdout []byte, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scaled(t, 60*time.Second))
	defer cancel()
	cmd, err := InspectorCLI(ctx, root, args...)
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.Bytes(), errOut.String(), err
}

func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	root := rootOrSkip(t, InspectorCLIPath)
	const token = "test-token"
	url := echoServer(t, token)
	auth := "Authorization: Bearer " + token

	t.Run("ToolsList", func(t *testing.T) {
		t.Parallel()
		out, stderr, err := inspect(t, root, url, "--transport", "http", "--header", auth, "--method", "tools/list")
		require.NoError(t, err, "stderr: %s", stderr)
		var res struct {
			Tools []struct {
				Name        string         `json:"name"`
				InputSchema map[string]any `json:"inputSchema"`
			} `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(out, &res), "stdout: %s", out)
		require.Len(t, res.Tools, 1)
		require.Equal(t, "echo", res.Tools[0].Name)
		require.Equal(t, "object", res.Tools[0].InputSchema["type"])
	})

	t.Run("ToolsCall", func(t *testing.T) {
		t.Parallel()
		out, stderr, err := inspect(t, root, url, "--transport", "http", "--header", auth,
			"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=hello world")
		require.NoError(t, err, "stderr: %s", stderr)
		var res struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		}
		require.NoError(t, json.Unmarshal(out, &res), "stdout: %s", out)
		require.False(t, res.IsError)
		require.Len(t, res.Content, 1)
		require.Equal(t, "text", res.Content[0].Type)
		require.Equal(t, "echo: hello world", res.Content[0].Text)
	})

	t.Run("NoToken", func(t *testing.T) {
		t.Parallel()
		out, stderr, err := inspect(t, root, url, "--transport", "http", "--method", "tools/list")
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "want a non-zero exit without the token, got %v; stdout: %s", err, out)
		require.Contains(t, stderr, "unauthorized")
	})
}
