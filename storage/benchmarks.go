package storage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"proctor/migrations"
	"proctor/models"
)

// importBatchSize is how many rows one INSERT of an import carries: large enough
// that 812 tasks take two statements, small enough to stay below the bind
// parameter limits of SQLite (32766) and PostgreSQL (65535) for the widest row.
const importBatchSize = 500

// captureBatchSize is how many reference captures one INSERT of an import
// carries.
const captureBatchSize = 8

// ListBenchmarks returns benchmarks with their current version's counts, by
// name; unpublished ones only when scope includes them.
func (db *DB) ListBenchmarks(ctx context.Context, scope models.BenchmarkScope) ([]models.BenchmarkListItem, error) {
	q := db.q(ctx).Table("benchmarks b").
		Select(`b.slug, b.name, b.description, b.format, b.published,
			COALESCE(v.id, 0) AS version_id, COALESCE(v.version, 0) AS version, COALESCE(v.task_count, 0) AS tasks,
			(SELECT COUNT(*) FROM subsets s WHERE s.version_id = v.id) AS subsets,
			(SELECT COUNT(*) FROM sites si WHERE si.benchmark_id = b.id) AS sites`).
		Joins("LEFT JOIN benchmark_versions v ON v.id = b.current_version_id").
		Order("b.name")
	if !scope.Unpublished {
		q = q.Where("b.published = ?", true)
	}
	var out []models.BenchmarkListItem
	if err := q.Scan(&out).Error; err != nil {
		return nil, wrap(err, "benchmarks")
	}
	versionIDs := make([]int64, 0, len(out))
	for _, b := range out {
		versionIDs = append(versionIDs, b.VersionID)
	}
	subsets, err := subsetNamesByVersion(db.q(ctx), versionIDs)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].SubsetNames = subsets[out[i].VersionID]
	}
	return out, nil
}

// ImportBenchmark stores a dataset, already checked by the benchmark service
// (service.Benchmarks.Import), as the next version of the benchmark slug,
// creating the benchmark (and its sites) when new; the version records the
// user importedBy as its importer (0: nobody, as for the system's imports).
// Identical input (same checksum as an
// existing version) changes nothing and returns Created=false. Everything
// happens in one transaction: a failure writes nothing. ECONFLICT when the
// slug holds data of another format (the service refuses that first; this
// is the check under the benchmark's lock, for imports that race).
func (db *DB) ImportBenchmark(ctx context.Context, slug string, ds *models.Dataset, sourceName string, importedBy int64) (models.ImportResult, error) {
	var res models.ImportResult
	var importer *int64
	if importedBy != 0 {
		importer = &importedBy
	}
	err := db.tx(ctx, func(tx *gorm.DB) error {
		b, err := db.benchmarkForImport(tx, slug, ds)
		if err != nil {
			return err
		}
		res.Benchmark = b

		var existing models.BenchmarkVersion
		err = tx.Where("benchmark_id = ? AND checksum = ?", b.ID, ds.Checksum).Take(&existing).Error
		switch {
		case err == nil:
			res.Version = &existing
			return nil
		case !errors.Is(err, gorm.ErrRecordNotFound):
			return wrap(err, "benchmark version")
		}

		var last int
		if err := tx.Model(&models.BenchmarkVersion{}).Where("benchmark_id = ?", b.ID).
			Select("COALESCE(MAX(version), 0)").Scan(&last).Error; err != nil {
			return wrap(err, "benchmark version")
		}
		rubric := 0
		for _, t := range ds.Tasks {
			rubric += len(t.RubricItems)
		}
		v := &models.BenchmarkVersion{
			BenchmarkID: b.ID, Version: last + 1, Checksum: ds.Checksum, SourceName: sourceName,
			TaskCount: len(ds.Tasks), RubricItems: rubric, PassThreshold: ds.EffectivePassThreshold(),
			ImportedBy: importer, CreatedAt: db.now(),
		}
		if err := tx.Omit(clause.Associations).Create(v).Error; err != nil {
			return wrap(err, "benchmark version")
		}
		if err := insertTasks(tx, v.ID, ds); err != nil {
			return err
		}
		if err := db.ensureSites(tx, b.ID, ds); err != nil {
			return err
		}
		// A renamed header takes effect with the next version; the checksum
		// leaves names out, so a rename alone changes nothing.
		updates := map[string]any{"current_version_id": v.ID, "updated_at": db.now()}
		if name := strings.TrimSpace(ds.Name); name != "" {
			updates["name"], b.Name = name, name
		}
		if desc := strings.TrimSpace(ds.Description); desc != "" {
			updates["description"], b.Description = desc, desc
		}
		if err := tx.Model(&models.Benchmark{}).Where("id = ?", b.ID).Updates(updates).Error; err != nil {
			return wrap(err, "benchmark")
		}
		b.CurrentVersionID = &v.ID
		res.Version, res.Created = v, true
		return nil
	})
	if err != nil {
		return models.ImportResult{}, err
	}
	return res, nil
}

// benchmarkForImport returns the benchmark slug, locked for the import, or
// creates it from the dataset. ECONFLICT when it exists in another format.
func (db *DB) benchmarkForImport(tx *gorm.DB, slug string, ds *models.Dataset) (*models.Benchmark, error) {
	var b models.Benchmark
	q := tx.Where("slug = ?", slug)
	if db.dialect == migrations.Postgres {
		// Serialise imports of one benchmark so version numbers cannot race.
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	err := q.Take(&b).Error
	switch {
	case err == nil:
		if b.Format != ds.Format {
			return nil, &models.Error{Code: models.ECONFLICT, Field: "format",
				Message: fmt.Sprintf("benchmark %q was imported in another format meanwhile", slug)}
		}
		return &b, nil
	case !errors.Is(err, gorm.ErrRecordNotFound):
		return nil, wrap(err, "benchmark")
	}
	name := strings.TrimSpace(ds.Name)
	if name == "" {
		name = slug
	}
	now := db.now()
	b = models.Benchmark{
		Slug: slug, Name: name, Description: strings.TrimSpace(ds.Description), Format: ds.Format,
		Evaluator: ds.Evaluator, Grades: ds.Grades, Published: true, DefaultMaxSteps: 30, CreatedAt: now, UpdatedAt: now,
	}
	if b.Grades == "" {
		b.Grades = models.GradesAgents
	}
	if b.Evaluator == "" {
		b.Evaluator = models.EvaluatorNone
	}
	if err := tx.Omit(clause.Associations).Create(&b).Error; err != nil {
		return nil, wrap(err, fmt.Sprintf("benchmark %q", slug))
	}
	return &b, nil
}

// insertTasks writes a version's tasks, their site and attribute index rows, their
// rubric items, their reference captures and the subsets, in batches.
func insertTasks(tx *gorm.DB, versionID int64, ds *models.Dataset) error {
	tasks := make([]models.Task, len(ds.Tasks))
	for i, t := range ds.Tasks {
		t.ID = 0
		t.VersionID = versionID
		t.Position = i
		t.SearchText = strings.ToLower(t.Intent)
		if t.SiteKey == "" {
			t.SiteKey = models.SiteKeyOf(t.Sites)
		}
		t.RubricItems = nil       // written below with their task ids
		t.ReferenceCaptures = nil // likewise
		tasks[i] = t
	}
	if err := tx.Omit(clause.Associations).CreateInBatches(&tasks, importBatchSize).Error; err != nil {
		return wrap(err, "task")
	}
	byExternal := make(map[string]int64, len(tasks))
	var sites []models.TaskSite
	var attrs []models.TaskAttribute
	var items []models.RubricItem
	var captures []models.ReferenceCapture
	for i, t := range tasks {
		if t.ID == 0 {
			return fmt.Errorf("import: task %s got no id", t.ExternalID)
		}
		byExternal[t.ExternalID] = t.ID
		for _, s := range uniqueNonEmpty(t.Sites) {
			sites = append(sites, models.TaskSite{TaskID: t.ID, Site: s})
		}
		for _, a := range uniqueNonEmpty(t.Attributes) {
			attrs = append(attrs, models.TaskAttribute{TaskID: t.ID, Attribute: a})
		}
		for j, r := range ds.Tasks[i].RubricItems {
			r.ID, r.TaskID = 0, t.ID
			if r.Key == "" {
				r.Key = fmt.Sprintf("R%d", j+1)
			}
			r.Position = j
			items = append(items, r)
		}
		for _, c := range ds.Tasks[i].ReferenceCaptures {
			c.ID, c.TaskID = 0, t.ID
			captures = append(captures, c)
		}
	}
	if err := createBatches(tx, sites, "task site"); err != nil {
		return err
	}
	if err := createBatches(tx, attrs, "task attribute"); err != nil {
		return err
	}
	if err := createBatches(tx, items, "rubric item"); err != nil {
		return err
	}
	// Captures are images of up to a few megabytes each: a few per
	// statement keep the statements small.
	if len(captures) > 0 {
		if err := tx.CreateInBatches(&captures, captureBatchSize).Error; err != nil {
			return wrap(err, "reference capture")
		}
	}
	for _, s := range ds.Subsets {
		sub := models.Subset{VersionID: versionID, Name: s.Name, Description: s.Description,
			Checksum: s.Checksum, TaskCount: len(s.ExternalIDs)}
		if err := tx.Create(&sub).Error; err != nil {
			return wrap(err, fmt.Sprintf("subset %q", s.Name))
		}
		members := make([]models.SubsetTask, 0, len(s.ExternalIDs))
		for _, ext := range s.ExternalIDs {
			id, ok := byExternal[ext]
			if !ok {
				return fmt.Errorf("import: subset %q: task id %s is not in the dataset", s.Name, ext)
			}
			members = append(members, models.SubsetTask{SubsetID: sub.ID, TaskID: id})
		}
		if err := createBatches(tx, members, fmt.Sprintf("subset %q task", s.Name)); err != nil {
			return err
		}
	}
	return nil
}

// createBatches inserts rows in batches; nothing when rows is empty.
func createBatches[T any](tx *gorm.DB, rows []T, what string) error {
	if len(rows) == 0 {
		return nil
	}
	if err := tx.CreateInBatches(&rows, importBatchSize).Error; err != nil {
		return wrap(err, what)
	}
	return nil
}

// uniqueNonEmpty returns the distinct non-empty values in order.
func uniqueNonEmpty(values []string) []string {
	out := make([]string, 0, len(values))
	seen := make(map[string]bool, len(values))
	for _, v := range values {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// ensureSites creates the sites the dataset uses that the benchmark lacks. Sites
// that exist keep their configured URL, reset hook and concurrency cap.
func (db *DB) ensureSites(tx *gorm.DB, benchmarkID int64, ds *models.Dataset) error {
	want := map[string]string{}
	for _, s := range ds.Sites {
		want[s.Name] = s.Placeholder
	}
	for _, t := range ds.Tasks {
		for _, s := range t.Sites {
			if _, ok := want[s]; !ok && s != "" {
				want[s] = models.PlaceholderFor(s)
			}
		}
	}
	var have []string
	if err := tx.Model(&models.Site{}).Where("benchmark_id = ?", benchmarkID).Pluck("name", &have).Error; err != nil {
		return wrap(err, "sites")
	}
	for _, n := range have {
		delete(want, n)
	}
	if len(want) == 0 {
		return nil
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	now := db.now()
	rows := make([]models.Site, 0, len(names))
	for _, n := range names {
		ph := want[n]
		if ph == "" {
			ph = models.PlaceholderFor(n)
		}
		rows = append(rows, models.Site{BenchmarkID: benchmarkID, Name: n, Placeholder: ph, CreatedAt: now, UpdatedAt: now})
	}
	return createBatches(tx, rows, "site")
}

// benchmarkIn loads a benchmark by slug; an unpublished one only when scope
// includes it. ENOTFOUND otherwise.
func benchmarkIn(q *gorm.DB, slug string, scope models.BenchmarkScope) (*models.Benchmark, error) {
	var b models.Benchmark
	if err := q.Where("slug = ?", slug).Take(&b).Error; err != nil {
		return nil, wrap(err, fmt.Sprintf("benchmark %q", slug))
	}
	if !b.Published && !scope.Unpublished {
		return nil, models.Errorf(models.ENOTFOUND, "benchmark %q not found.", slug)
	}
	return &b, nil
}

// Benchmark returns a benchmark with its current version (and that
// version's subsets) and its sites, in scope. ENOTFOUND when missing or out
// of scope.
func (db *DB) Benchmark(ctx context.Context, slug string, scope models.BenchmarkScope) (*models.Benchmark, error) {
	q := db.q(ctx)
	b, err := benchmarkIn(q, slug, scope)
	if err != nil {
		return nil, err
	}
	if b.CurrentVersionID != nil {
		var v models.BenchmarkVersion
		if err := q.Preload("Subsets", func(tx *gorm.DB) *gorm.DB { return tx.Order("name") }).
			Take(&v, *b.CurrentVersionID).Error; err != nil {
			return nil, wrap(err, "benchmark version")
		}
		b.CurrentVersion = &v
	}
	sites, err := listSites(q, b.ID, scope)
	if err != nil {
		return nil, err
	}
	b.Sites = sites
	return b, nil
}

// listSites returns a benchmark's sites by name; their configured URLs and
// reset hooks, which describe the deployment, only when scope has secrets.
func listSites(q *gorm.DB, benchmarkID int64, scope models.BenchmarkScope) ([]models.Site, error) {
	var sites []models.Site
	if err := q.Where("benchmark_id = ?", benchmarkID).Order("name").Find(&sites).Error; err != nil {
		return nil, wrap(err, "sites")
	}
	if !scope.Secrets {
		for i := range sites {
			sites[i].URL, sites[i].ResetURL = "", ""
		}
	}
	return sites, nil
}

// ListSites returns the sites of a benchmark in scope, by name; URLs and
// reset hooks are blank unless scope has secrets. ENOTFOUND for an unknown
// benchmark or one out of scope.
func (db *DB) ListSites(ctx context.Context, slug string, scope models.BenchmarkScope) ([]models.Site, error) {
	q := db.q(ctx)
	b, err := benchmarkIn(q, slug, scope)
	if err != nil {
		return nil, err
	}
	return listSites(q, b.ID, scope)
}

// UpdateSite saves one site of a benchmark as given (checked by the benchmark
// service, for administrators only): its base URL, its reset hook and its
// concurrency cap (0 = no cap); empty URLs clear the setting. ENOTFOUND for
// an unknown benchmark (published or not) or site.
func (db *DB) UpdateSite(ctx context.Context, slug, siteName, siteURL, resetURL string, maxConcurrency int) (*models.Site, error) {
	var site models.Site
	err := db.tx(ctx, func(tx *gorm.DB) error {
		b, err := benchmarkIn(tx, slug, models.BenchmarkScope{Unpublished: true})
		if err != nil {
			return err
		}
		if err := tx.Where("benchmark_id = ? AND name = ?", b.ID, siteName).Take(&site).Error; err != nil {
			return wrap(err, fmt.Sprintf("site %q", siteName))
		}
		site.URL, site.ResetURL, site.MaxConcurrency, site.UpdatedAt = siteURL, resetURL, maxConcurrency, db.now()
		return wrap(tx.Model(&site).Select("url", "reset_url", "max_concurrency", "updated_at").Updates(&site).Error, "site")
	})
	if err != nil {
		return nil, err
	}
	return &site, nil
}

// SetBenchmarkPublished shows or hides a benchmark from non-admins. ENOTFOUND
// for an unknown slug.
func (db *DB) SetBenchmarkPublished(ctx context.Context, slug string, published bool) error {
	r := db.q(ctx).Model(&models.Benchmark{}).Where("slug = ?", slug).
		Updates(map[string]any{"published": published, "updated_at": db.now()})
	if r.Error != nil {
		return wrap(r.Error, "benchmark")
	}
	if r.RowsAffected == 0 {
		return models.Errorf(models.ENOTFOUND, "benchmark %q not found.", slug)
	}
	return nil
}

// AdminBenchmarks lists every benchmark, published or not, by name, with all its
// versions newest first.
func (db *DB) AdminBenchmarks(ctx context.Context) ([]models.AdminBenchmark, error) {
	q := db.q(ctx)
	var bs []models.Benchmark
	if err := q.Order("name, slug").Find(&bs).Error; err != nil {
		return nil, wrap(err, "benchmarks")
	}
	var vs []models.BenchmarkVersion
	if err := q.Order("benchmark_id, version DESC").Find(&vs).Error; err != nil {
		return nil, wrap(err, "benchmark versions")
	}
	byBenchmark := map[int64][]models.BenchmarkVersion{}
	for _, v := range vs {
		byBenchmark[v.BenchmarkID] = append(byBenchmark[v.BenchmarkID], v)
	}
	out := make([]models.AdminBenchmark, len(bs))
	for i, b := range bs {
		out[i] = models.AdminBenchmark{Benchmark: b, Versions: byBenchmark[b.ID]}
	}
	return out, nil
}

// groupCount is one row of a GROUP BY count.
type groupCount struct {
	K string
	N int
}

// countsOf turns GROUP BY rows into a map, leaving out the empty group.
func countsOf(rows []groupCount) map[string]int {
	m := make(map[string]int, len(rows))
	for _, r := range rows {
		if r.K != "" {
			m[r.K] += r.N
		}
	}
	return m
}

// taskColumnCounts counts a version's tasks by one of their label columns.
func taskColumnCounts(q *gorm.DB, versionID int64, column string) (map[string]int, error) {
	switch column {
	case "site_key", "task_type", "difficulty", "domain":
	default:
		return nil, fmt.Errorf("count tasks: unexpected column %q", column)
	}
	var rows []groupCount
	err := q.Table("tasks").Select(column+" AS k, COUNT(*) AS n").
		Where("version_id = ?", versionID).Group(column).Scan(&rows).Error
	if err != nil {
		return nil, wrap(err, "task counts")
	}
	return countsOf(rows), nil
}

// BenchmarkSummary counts the current version's tasks by site key, task type,
// difficulty, domain and attribute, its rubric items, and each subset's tasks by
// site key, all with GROUP BY queries. ENOTFOUND for an unknown benchmark or
// one out of scope.
func (db *DB) BenchmarkSummary(ctx context.Context, slug string, scope models.BenchmarkScope) (*models.BenchmarkSummary, error) {
	q := db.q(ctx)
	b, err := benchmarkIn(q, slug, scope)
	if err != nil {
		return nil, err
	}
	return summaryOf(q, b)
}

func summaryOf(q *gorm.DB, b *models.Benchmark) (*models.BenchmarkSummary, error) {
	s := &models.BenchmarkSummary{
		Slug: b.Slug, Name: b.Name, Format: b.Format,
		BySite: map[string]int{}, ByTaskType: map[string]int{}, ByDifficulty: map[string]int{},
		ByDomain: map[string]int{}, ByAttribute: map[string]int{}, Subsets: []models.SubsetSummary{},
	}
	if b.CurrentVersionID == nil {
		return s, nil
	}
	vid := *b.CurrentVersionID
	var v models.BenchmarkVersion
	if err := q.Take(&v, vid).Error; err != nil {
		return nil, wrap(err, "benchmark version")
	}
	s.Version, s.Checksum = v.Version, v.Checksum
	if b.GradesCandidates() {
		s.PassThreshold = v.PassThreshold
	}
	var total int64
	if err := q.Model(&models.Task{}).Where("version_id = ?", vid).Count(&total).Error; err != nil {
		return nil, wrap(err, "tasks")
	}
	s.Tasks = int(total)
	for col, dst := range map[string]*map[string]int{
		"site_key": &s.BySite, "task_type": &s.ByTaskType, "difficulty": &s.ByDifficulty, "domain": &s.ByDomain,
	} {
		m, err := taskColumnCounts(q, vid, col)
		if err != nil {
			return nil, err
		}
		*dst = m
	}
	var rows []groupCount
	if err := q.Table("task_attributes ta").Select("ta.attribute AS k, COUNT(*) AS n").
		Joins("JOIN tasks t ON t.id = ta.task_id").Where("t.version_id = ?", vid).
		Group("ta.attribute").Scan(&rows).Error; err != nil {
		return nil, wrap(err, "attribute counts")
	}
	s.ByAttribute = countsOf(rows)
	var rubric int64
	if err := q.Table("rubric_items ri").Joins("JOIN tasks t ON t.id = ri.task_id").
		Where("t.version_id = ?", vid).Count(&rubric).Error; err != nil {
		return nil, wrap(err, "rubric items")
	}
	s.RubricItems = int(rubric)

	var subsets []models.Subset
	if err := q.Where("version_id = ?", vid).Order("name").Find(&subsets).Error; err != nil {
		return nil, wrap(err, "subsets")
	}
	if len(subsets) == 0 {
		return s, nil
	}
	var siteRows []struct {
		SubsetID int64
		K        string
		N        int
	}
	if err := q.Table("subset_tasks st").Select("st.subset_id, t.site_key AS k, COUNT(*) AS n").
		Joins("JOIN subsets s ON s.id = st.subset_id").Joins("JOIN tasks t ON t.id = st.task_id").
		Where("s.version_id = ?", vid).Group("st.subset_id, t.site_key").Scan(&siteRows).Error; err != nil {
		return nil, wrap(err, "subset counts")
	}
	index := make(map[int64]int, len(subsets))
	for i, sub := range subsets {
		index[sub.ID] = i
		s.Subsets = append(s.Subsets, models.SubsetSummary{Name: sub.Name, BySite: map[string]int{}})
	}
	for _, r := range siteRows {
		ss := &s.Subsets[index[r.SubsetID]]
		ss.Tasks += r.N
		if r.K != "" {
			ss.BySite[r.K] += r.N
		}
	}
	return s, nil
}

// BenchmarkDetail returns what the benchmark page shows: the benchmark with its
// current version, the summary, the sites and how many tasks use each site.
// ENOTFOUND like Benchmark.
func (db *DB) BenchmarkDetail(ctx context.Context, slug string, scope models.BenchmarkScope) (*models.BenchmarkDetail, error) {
	b, err := db.Benchmark(ctx, slug, scope)
	if err != nil {
		return nil, err
	}
	sum, err := summaryOf(db.q(ctx), b)
	if err != nil {
		return nil, err
	}
	d := &models.BenchmarkDetail{Benchmark: *b, Summary: *sum, Sites: b.Sites, SiteTasks: map[string]int{}}
	if b.CurrentVersionID != nil {
		var rows []groupCount
		if err := db.q(ctx).Table("task_sites ts").Select("ts.site AS k, COUNT(*) AS n").
			Joins("JOIN tasks t ON t.id = ts.task_id").Where("t.version_id = ?", *b.CurrentVersionID).
			Group("ts.site").Scan(&rows).Error; err != nil {
			return nil, wrap(err, "site counts")
		}
		d.SiteTasks = countsOf(rows)
	}
	return d, nil
}

// facetsOf lists the distinct sites (with multi-site when tasks span several),
// task types, difficulties, domains, attributes and subsets of b's current
// version, sorted, for the task browser's filters.
func facetsOf(q *gorm.DB, b *models.Benchmark) (*models.BenchmarkFacets, error) {
	f := &models.BenchmarkFacets{}
	if b.CurrentVersionID == nil {
		return f, nil
	}
	vid := *b.CurrentVersionID
	pluck := func(dst *[]string, tx *gorm.DB, column, what string) error {
		if err := tx.Distinct().Order(column).Pluck(column, dst).Error; err != nil {
			return wrap(err, what)
		}
		*dst = uniqueNonEmpty(*dst)
		return nil
	}
	if err := pluck(&f.Sites, q.Table("task_sites ts").Joins("JOIN tasks t ON t.id = ts.task_id").
		Where("t.version_id = ?", vid), "ts.site", "sites"); err != nil {
		return nil, err
	}
	var multi int64
	if err := q.Model(&models.Task{}).Where("version_id = ? AND site_key = ?", vid, models.MultiSite).
		Count(&multi).Error; err != nil {
		return nil, wrap(err, "sites")
	}
	if multi > 0 {
		f.Sites = append(f.Sites, models.MultiSite)
	}
	for col, dst := range map[string]*[]string{"task_type": &f.TaskTypes, "difficulty": &f.Difficulties, "domain": &f.Domains} {
		if err := pluck(dst, q.Table("tasks").Where("version_id = ?", vid), col, "task labels"); err != nil {
			return nil, err
		}
	}
	if err := pluck(&f.Attributes, q.Table("task_attributes ta").Joins("JOIN tasks t ON t.id = ta.task_id").
		Where("t.version_id = ?", vid), "ta.attribute", "attributes"); err != nil {
		return nil, err
	}
	if err := pluck(&f.Subsets, q.Table("subsets").Where("version_id = ?", vid), "name", "subsets"); err != nil {
		return nil, err
	}
	return f, nil
}

// likePattern escapes a user's text for LIKE ... ESCAPE '!' and wraps it in %.
func likePattern(text string) string {
	r := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
	return "%" + r.Replace(strings.ToLower(text)) + "%"
}

// filteredTasks builds the task query of a filter over one version.
func filteredTasks(q *gorm.DB, versionID int64, f models.TaskFilter) *gorm.DB {
	tx := q.Table("tasks t").Where("t.version_id = ?", versionID)
	switch f.Site {
	case "":
	case models.MultiSite:
		tx = tx.Where("t.site_key = ?", models.MultiSite)
	default:
		tx = tx.Where("EXISTS (SELECT 1 FROM task_sites ts WHERE ts.task_id = t.id AND ts.site = ?)", f.Site)
	}
	if f.TaskType != "" {
		tx = tx.Where("t.task_type = ?", f.TaskType)
	}
	if f.Difficulty != "" {
		tx = tx.Where("t.difficulty = ?", f.Difficulty)
	}
	if f.Domain != "" {
		tx = tx.Where("t.domain = ?", f.Domain)
	}
	if f.Attribute != "" {
		tx = tx.Where("EXISTS (SELECT 1 FROM task_attributes ta WHERE ta.task_id = t.id AND ta.attribute = ?)", f.Attribute)
	}
	if f.Subset != "" {
		tx = tx.Where(`EXISTS (SELECT 1 FROM subset_tasks st JOIN subsets s ON s.id = st.subset_id
			WHERE st.task_id = t.id AND s.version_id = ? AND s.name = ?)`, versionID, f.Subset)
	}
	if f.Query != "" {
		tx = tx.Where("t.search_text LIKE ? ESCAPE '!'", likePattern(f.Query))
	}
	return tx
}

// ListTasks returns one page of the current version's tasks matching the filter,
// in file order, with their rubric items, and how many match in all. The hidden
// fields are blank unless scope has secrets. ENOTFOUND like Benchmark.
func (db *DB) ListTasks(ctx context.Context, slug string, f models.TaskFilter, scope models.BenchmarkScope) ([]models.Task, int, error) {
	q := db.q(ctx)
	b, err := benchmarkIn(q, slug, scope)
	if err != nil {
		return nil, 0, err
	}
	return listTasks(q, b, f.Normalized(), scope)
}

func listTasks(q *gorm.DB, b *models.Benchmark, f models.TaskFilter, scope models.BenchmarkScope) ([]models.Task, int, error) {
	if b.CurrentVersionID == nil {
		return []models.Task{}, 0, nil
	}
	vid := *b.CurrentVersionID
	var total int64
	if err := filteredTasks(q, vid, f).Count(&total).Error; err != nil {
		return nil, 0, wrap(err, "tasks")
	}
	tasks := []models.Task{}
	if total > 0 {
		cols := "t.*"
		if !scope.Secrets {
			cols = publicTaskColumns // the hidden columns are not even read
		}
		if err := filteredTasks(q, vid, f).Select(cols).Order("t.position").Limit(f.PerPage).Offset((f.Page - 1) * f.PerPage).
			Find(&tasks).Error; err != nil {
			return nil, 0, wrap(err, "tasks")
		}
	}
	if err := loadRubrics(q, tasks); err != nil {
		return nil, 0, err
	}
	redactTasks(tasks, scope)
	return tasks, int(total), nil
}

// publicTaskColumns are the task columns anyone may read: all but eval_spec,
// reference_answers and reference_actions.
const publicTaskColumns = `t.id, t.version_id, t.external_id, t.position, t.intent, t.intent_template,
	t.start_urls, t.sites, t.site_key, t.task_type, t.difficulty, t.domain, t.attributes, t.revision,
	t.modality, t.file_format, t.access_type, t.max_tool_calls, t.max_seconds, t.metadata`

// loadRubrics fills the rubric items of tasks with one query.
func loadRubrics(q *gorm.DB, tasks []models.Task) error {
	if len(tasks) == 0 {
		return nil
	}
	ids := make([]int64, len(tasks))
	index := make(map[int64]int, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
		index[t.ID] = i
	}
	var items []models.RubricItem
	if err := q.Where("task_id IN ?", ids).Order("task_id, position").Find(&items).Error; err != nil {
		return wrap(err, "rubric items")
	}
	for _, it := range items {
		t := &tasks[index[it.TaskID]]
		t.RubricItems = append(t.RubricItems, it)
	}
	return nil
}

// redactTasks blanks the hidden fields of tasks unless scope has secrets.
// Every method returning tasks passes them through here.
func redactTasks(tasks []models.Task, scope models.BenchmarkScope) {
	if scope.Secrets {
		return
	}
	for i := range tasks {
		tasks[i].HideSecrets()
	}
}

// BrowseTasks returns one page of the task browser: the benchmark, the filter
// values, the matching tasks (hidden fields blank unless scope has secrets)
// and their total. ENOTFOUND like Benchmark.
func (db *DB) BrowseTasks(ctx context.Context, slug string, f models.TaskFilter, scope models.BenchmarkScope) (*models.TaskPage, error) {
	q := db.q(ctx)
	b, err := benchmarkIn(q, slug, scope)
	if err != nil {
		return nil, err
	}
	f = f.Normalized()
	facets, err := facetsOf(q, b)
	if err != nil {
		return nil, err
	}
	tasks, total, err := listTasks(q, b, f, scope)
	if err != nil {
		return nil, err
	}
	return &models.TaskPage{Benchmark: *b, Facets: *facets, Filter: f, Tasks: tasks, Total: total}, nil
}

// TaskByExternalID returns a task of the benchmark's current version by its id in
// the source file, with its rubric items; the hidden fields are blank unless
// scope has secrets. ENOTFOUND for an unknown task or benchmark (or one out
// of scope).
func (db *DB) TaskByExternalID(ctx context.Context, slug, externalID string, scope models.BenchmarkScope) (*models.Task, error) {
	q := db.q(ctx)
	b, err := benchmarkIn(q, slug, scope)
	if err != nil {
		return nil, err
	}
	notFound := models.Errorf(models.ENOTFOUND, "task %q not found in benchmark %q.", externalID, slug)
	if b.CurrentVersionID == nil {
		return nil, notFound
	}
	cols := "t.*"
	if !scope.Secrets {
		cols = publicTaskColumns
	}
	var tasks []models.Task
	if err := q.Table("tasks t").Select(cols).Where("t.version_id = ? AND t.external_id = ?", *b.CurrentVersionID, externalID).
		Limit(1).Find(&tasks).Error; err != nil {
		return nil, wrap(err, "task")
	}
	if len(tasks) == 0 {
		return nil, notFound
	}
	if err := loadRubrics(q, tasks); err != nil {
		return nil, err
	}
	redactTasks(tasks, scope)
	return &tasks[0], nil
}

// SetRevealReferences marks whether a benchmark's reference action scripts are
// public (teams may then replay them). ENOTFOUND for an unknown slug.
func (db *DB) SetRevealReferences(ctx context.Context, slug string, reveal bool) error {
	res := db.q(ctx).Model(&models.Benchmark{}).Where("slug = ?", slug).Update("reveal_references", reveal)
	if res.Error != nil {
		return wrap(res.Error, "benchmark")
	}
	if res.RowsAffected == 0 {
		return models.Errorf(models.ENOTFOUND, "Benchmark %q not found.", slug)
	}
	return nil
}
