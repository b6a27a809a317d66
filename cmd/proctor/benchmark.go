package main

import "context"

// importBenchmark is `proctor import`.
func (p *Program) importBenchmark(ctx context.Context, args []string) error {
	return usagef("not implemented yet")
}

// benchmark is `proctor benchmark list | show`.
func (p *Program) benchmark(ctx context.Context, args []string) error {
	return usagef("not implemented yet")
}
