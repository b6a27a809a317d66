package connect

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// An episode's accessibility text (runner/episode's axtree.js) has one
// element a line:
//
//	  [e12] heading(2) "Cart"
//	  [e13] link "Checkout" -> /checkout
//	  [e14] textbox "Email" value="a@b.c" required
//
// MCP agents get it in Playwright MCP's snapshot layout, one YAML list item
// an element, its ref in brackets:
//
//	  - heading "Cart" [level=2] [ref=e12]
//	  - link "Checkout" [ref=e13]:
//	    - /url: /checkout
//	  - textbox "Email" [required] [ref=e14]: a@b.c
//
// The refs are the episode's element ids, so a ref an agent sends is an
// element of the snapshot it saw.

var (
	axLine   = regexp.MustCompile(`^( *)\[(e[0-9]{1,9})\] ([a-z]+)(?:\(([0-9])\))?(?: ("(?:[^"\\]|\\.)*"))?(.*)$`)
	axDetail = regexp.MustCompile(`^ (?:-> (\S+)|value=("(?:[^"\\]|\\.)*")|options=(\[.*?\])(?: \(\+([0-9]+) more\))?|([a-z]+))`)
)

// element is one parsed line of the accessibility text.
type element struct {
	depth   int
	ref     string
	role    string
	name    string
	level   string
	url     string
	value   string
	options []string
	more    string
	flags   []string
}

// parseAXTree parses the accessibility text; lines it cannot read (the
// truncation note) come back as text.
func parseAXTree(text string) (elems []element, notes []string) {
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		m := axLine.FindStringSubmatch(line)
		if m == nil {
			notes = append(notes, strings.TrimSpace(line))
			continue
		}
		e := element{depth: len(m[1]) / 2, ref: m[2], role: m[3], level: m[4]}
		if m[5] != "" {
			_ = json.Unmarshal([]byte(m[5]), &e.name)
		}
		rest := m[6]
		for rest != "" {
			d := axDetail.FindStringSubmatch(rest)
			if d == nil {
				break
			}
			switch {
			case d[1] != "":
				e.url = d[1]
			case d[2] != "":
				_ = json.Unmarshal([]byte(d[2]), &e.value)
			case d[3] != "":
				_ = json.Unmarshal([]byte(d[3]), &e.options)
				e.more = d[4]
			case d[5] != "":
				e.flags = append(e.flags, d[5])
			}
			rest = rest[len(d[0]):]
		}
		elems = append(elems, e)
	}
	return elems, notes
}

// Refs returns the element ids of an accessibility text.
func Refs(axtree string) map[string]bool {
	elems, _ := parseAXTree(axtree)
	refs := make(map[string]bool, len(elems))
	for _, e := range elems {
		refs[e.ref] = true
	}
	return refs
}

// SnapshotYAML renders an accessibility text in Playwright MCP's snapshot
// layout. root, when set, keeps only that element and what is nested in
// it; depth, when positive, keeps that many levels below the top.
func SnapshotYAML(axtree, root string, depth int) (string, error) {
	elems, notes := parseAXTree(axtree)
	if root != "" {
		start := -1
		for i, e := range elems {
			if e.ref == root {
				start = i
				break
			}
		}
		if start < 0 {
			return "", fmt.Errorf("ref %s is not in the current page snapshot; take a new snapshot", root)
		}
		end := start + 1
		for end < len(elems) && elems[end].depth > elems[start].depth {
			end++
		}
		elems = elems[start:end]
	}
	var b strings.Builder
	base := 0
	if len(elems) > 0 {
		base = elems[0].depth
	}
	for _, e := range elems {
		d := max(e.depth-base, 0)
		if depth > 0 && d >= depth {
			continue
		}
		writeElement(&b, e, strings.Repeat("  ", d))
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "- text: %s\n", yamlScalar(n))
	}
	return b.String(), nil
}

// writeElement writes one element and its properties.
func writeElement(b *strings.Builder, e element, indent string) {
	b.WriteString(indent)
	b.WriteString("- ")
	b.WriteString(e.role)
	if e.name != "" {
		b.WriteString(" ")
		q, _ := json.Marshal(e.name)
		b.Write(q)
	}
	if e.level != "" {
		b.WriteString(" [level=" + e.level + "]")
	}
	for _, f := range e.flags {
		if f == "unchecked" {
			continue
		}
		b.WriteString(" [" + f + "]")
	}
	b.WriteString(" [ref=" + e.ref + "]")
	children := e.url != "" || len(e.options) > 0
	switch {
	case e.value != "" && !children:
		b.WriteString(": " + yamlScalar(e.value))
	case children:
		b.WriteString(":")
	}
	b.WriteString("\n")
	if e.url != "" {
		fmt.Fprintf(b, "%s  - /url: %s\n", indent, yamlScalar(e.url))
	}
	if e.value != "" && children {
		fmt.Fprintf(b, "%s  - /value: %s\n", indent, yamlScalar(e.value))
	}
	for _, o := range e.options {
		q, _ := json.Marshal(o)
		fmt.Fprintf(b, "%s  - option %s\n", indent, q)
	}
	if e.more != "" {
		fmt.Fprintf(b, "%s  - text: (%s more options)\n", indent, e.more)
	}
}

// yamlScalar quotes s when YAML would not read it back as the same plain string.
func yamlScalar(s string) string {
	if s == "" || strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`\n") || strings.TrimSpace(s) != s ||
		strings.HasPrefix(s, "-") || strings.HasPrefix(s, "?") {
		q, _ := json.Marshal(s)
		return string(q)
	}
	return s
}
