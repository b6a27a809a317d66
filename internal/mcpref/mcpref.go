// Package mcpref runs the third-party MCP programs that Proctor's MCP server
// is checked against: Playwright MCP, whose browser tools (names and input
// schemas) Proctor's episode tools mirror, and the MCP Inspector's
// command-line client, an independent client that calls a server over
// streamable HTTP. Both are npm packages that `make deps` (scripts/deps.sh
// web) installs into node_modules/ at the repository root.
package mcpref

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Paths of the two programs, relative to the repository root.
const (
	PlaywrightMCPPath = "node_modules/@playwright/mcp/cli.js"
	InspectorCLIPath  = "node_modules/@modelcontextprotocol/inspector-cli/build/cli.js"
)

// PlaywrightMCPCaps are the optional capabilities that PlaywrightMCPTools
// turns on, so that the list holds every tool Playwright MCP can expose:
// --help names only vision, pdf and devtools, but the tools themselves are
// also tagged network, storage, testing and config, and --caps takes any of
// them.
var PlaywrightMCPCaps = []string{"vision", "pdf", "devtools", "network", "storage", "testing", "config"}

// ErrNotInstalled is returned (wrapped) when node or one of the npm programs
// is missing: `make deps` installs them.
var ErrNotInstalled = errors.New("not installed (make deps)")

// Node returns the path of the node binary on PATH, or an error wrapping
// ErrNotInstalled.
func Node() (string, error) {
	p, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("node: %w: %v", ErrNotInstalled, err)
	}
	return p, nil
}

// FindRoot returns the repository root: dir or the nearest folder above it
// that holds go.mod. It fails when there is none.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in any folder above the working directory")
		}
		dir = parent
	}
}

// installed returns root/rel when it is a file, or an error wrapping
// ErrNotInstalled.
func installed(root, rel string) (string, error) {
	p := filepath.Join(root, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: %w", rel, ErrNotInstalled)
		}
		return "", err
	}
	return p, nil
}

// PlaywrightMCPCommand returns the command line that starts Playwright MCP
// (installed under root/node_modules) as a stdio MCP server with every
// capability on. Listing tools launches no browser; the flags --headless and
// --isolated only keep a tool call from opening a window or a profile on
// disk. Errors wrap ErrNotInstalled when node or the package is missing.
func PlaywrightMCPCommand(root string) (name string, args []string, err error) {
	node, err := Node()
	if err != nil {
		return "", nil, err
	}
	cli, err := installed(root, PlaywrightMCPPath)
	if err != nil {
		return "", nil, err
	}
	return node, []string{cli, "--headless", "--isolated", "--caps=" + strings.Join(PlaywrightMCPCaps, ",")}, nil
}

// PlaywrightMCPTools starts Playwright MCP over stdio with the official Go
// SDK's client, returns its tools/list (every page of it) and stops it. The
// server runs in a temporary working folder, removed afterwards, so that it
// leaves nothing in the repository. Errors wrap ErrNotInstalled when node or
// the package is missing.
func PlaywrightMCPTools(ctx context.Context, root string) ([]*mcp.Tool, error) {
	name, args, err := PlaywrightMCPCommand(root)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "proctor-playwright-mcp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	cmd := exec.Command(name, args...)
	cmd.Dir = work
	client := mcp.NewClient(&mcp.Implementation{Name: "proctor-mcpref", Version: "0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		return nil, fmt.Errorf("start playwright mcp: %w", err)
	}
	defer session.Close()

	var tools []*mcp.Tool
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("playwright mcp tools/list: %w", err)
		}
		tools = append(tools, tool)
	}
	return tools, nil
}

// InspectorCLI returns the command that runs the MCP Inspector's
// command-line mode (installed under root/node_modules) with args appended,
// for example
//
//	URL --transport http --header "Authorization: Bearer T" --method tools/list
//	URL --transport http --method tools/call --tool-name echo --tool-arg text=hi
//
// The URL goes first: --header takes every plain word after it. A
// --tool-arg value that parses as JSON is sent as that JSON (n=3 is a
// number). The CLI prints the result as JSON on stdout and exits 0 (a tool's
// own failure included: the result then has "isError": true), or prints the
// error on stderr and exits 1. It always writes a deprecation notice to
// stderr, and runs `node` from PATH for its inner process.
//
// The command runs in the package's build folder: version 1.0.3 looks for
// its own package.json at ../package.json from the working folder but loads
// it relative to its module, and fails wherever the working folder's parent
// holds no package.json. Errors wrap ErrNotInstalled when node or the
// package is missing.
func InspectorCLI(ctx context.Context, root string, args ...string) (*exec.Cmd, error) {
	node, err := Node()
	if err != nil {
		return nil, err
	}
	cli, err := installed(root, InspectorCLIPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, node, append([]string{cli, "--cli"}, args...)...)
	cmd.Dir = filepath.Dir(cli)
	return cmd, nil
}
