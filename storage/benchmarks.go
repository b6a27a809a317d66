package storage

import (
	"context"

	"proctor/models"
)

// ListBenchmarks returns benchmarks with their current version's counts, by name.
// Unpublished benchmarks are listed only for admins.
func (db *DB) ListBenchmarks(ctx context.Context) ([]models.BenchmarkListItem, error) {
	q := db.q(ctx).Table("benchmarks b").
		Select(`b.slug, b.name, b.description, b.format, b.published,
			COALESCE(v.version, 0) AS version, COALESCE(v.task_count, 0) AS tasks,
			(SELECT COUNT(*) FROM subsets s WHERE s.version_id = v.id) AS subsets,
			(SELECT COUNT(*) FROM sites si WHERE si.benchmark_id = b.id) AS sites`).
		Joins("LEFT JOIN benchmark_versions v ON v.id = b.current_version_id").
		Order("b.name")
	if !models.ActorFrom(ctx).Privileged() {
		q = q.Where("b.published = ?", true)
	}
	var out []models.BenchmarkListItem
	if err := q.Scan(&out).Error; err != nil {
		return nil, wrap(err, "benchmarks")
	}
	return out, nil
}
