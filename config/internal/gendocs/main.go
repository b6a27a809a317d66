// Command gendocs writes docs/configuration.md from config's option table;
// `go generate ./config` runs it.
package main

import (
	"fmt"
	"os"

	"proctor/config"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs PATH (the configuration page to write)")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], config.Markdown(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
