package connect

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"proctor/internal/mcpref"
	"proctor/internal/testenv"
)

// schema is the part of a JSON Schema the contract compares.
type schema struct {
	Type                 any                `json:"type"`
	Enum                 []any              `json:"enum"`
	Items                *schema            `json:"items"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties any                `json:"additionalProperties"`
	Default              any                `json:"default"`
}

func schemaOf(t *testing.T, tool *mcp.Tool) *schema {
	t.Helper()
	raw, err := json.Marshal(tool.InputSchema)
	require.NoError(t, err)
	var s schema
	require.NoError(t, json.Unmarshal(raw, &s), string(raw))
	return &s
}

// proctorTools lists the tools of an episode's MCP server over the SDK's
// in-memory transport.
func proctorTools(t *testing.T) []*mcp.Tool {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	srv := newServer(NewMailbox(1, 1, 1))
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "contract", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	return res.Tools
}

// TestToolContract_PlaywrightMCP compares the episode's tools with
// Playwright MCP's (@playwright/mcp, from npm) for every name they share:
// each of Playwright MCP's arguments exists with the same type and values,
// the only argument Proctor adds is the optional thought, and the same
// arguments are required (one Playwright MCP requires although it has a
// default may be left out).
func TestToolContract_PlaywrightMCP(t *testing.T) {
	t.Parallel()
	root, err := mcpref.FindRoot(".")
	require.NoError(t, err)
	_, _, err = mcpref.PlaywrightMCPCommand(root)
	why := ""
	if err != nil {
		why = "Playwright MCP from npm: " + err.Error()
	}
	testenv.SkipUnlessAvailable(t, "browser", err == nil, why)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scaled(t, time.Minute))
	defer cancel()
	theirs, err := mcpref.PlaywrightMCPTools(ctx, root)
	require.NoError(t, err)
	reference := map[string]*mcp.Tool{}
	for _, tool := range theirs {
		reference[tool.Name] = tool
	}

	var shared []string
	for _, tool := range proctorTools(t) {
		ref, ok := reference[tool.Name]
		if !ok {
			continue
		}
		shared = append(shared, tool.Name)
		ours, want := schemaOf(t, tool), schemaOf(t, ref)
		require.Equal(t, "object", ours.Type, tool.Name)
		require.Equal(t, false, ours.AdditionalProperties, "%s refuses unknown arguments, as Playwright MCP does", tool.Name)
		for name, w := range want.Properties {
			o, ok := ours.Properties[name]
			require.True(t, ok, "%s has Playwright MCP's argument %s", tool.Name, name)
			require.Equal(t, w.Type, o.Type, "%s.%s: type", tool.Name, name)
			require.ElementsMatch(t, w.Enum, o.Enum, "%s.%s: values", tool.Name, name)
			if w.Items != nil {
				require.NotNil(t, o.Items, "%s.%s: items", tool.Name, name)
				require.Equal(t, w.Items.Type, o.Items.Type, "%s.%s: item type", tool.Name, name)
				require.ElementsMatch(t, w.Items.Enum, o.Items.Enum, "%s.%s: item values", tool.Name, name)
			}
		}
		for name := range ours.Properties {
			if _, ok := want.Properties[name]; !ok {
				require.Equal(t, "thought", name, "%s: Proctor adds only the optional thought", tool.Name)
				require.NotContains(t, ours.Required, name)
			}
		}
		for _, name := range want.Required {
			if want.Properties[name] != nil && want.Properties[name].Default != nil {
				continue // required by Playwright MCP's schema, yet it has a default
			}
			require.Contains(t, ours.Required, name, "%s requires %s, as Playwright MCP does", tool.Name, name)
		}
		for _, name := range ours.Required {
			require.Contains(t, want.Required, name, "%s requires nothing Playwright MCP does not", tool.Name)
		}
	}
	slices.Sort(shared)
	t.Logf("compared with Playwright MCP: %v", shared)
	for _, name := range []string{"browser_snapshot", "browser_click", "browser_type", "browser_select_option", "browser_press_key",
		"browser_hover", "browser_navigate", "browser_navigate_back", "browser_tabs", "browser_take_screenshot", "browser_wait_for",
		"browser_mouse_wheel", "browser_mouse_click_xy"} {
		require.Contains(t, shared, name, "Playwright MCP offers %s: %v", name, slices.Sorted(maps.Keys(reference)))
	}
}
