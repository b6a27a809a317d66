package importer_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/models"
)

func readData(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.SharedDataDir(t), filepath.FromSlash(rel)))
	require.NoError(t, err)
	return b
}

const (
	verifiedFile = "webarena-verified/webarena-verified.json"
	hardFile     = "webarena-verified/subsets/webarena-verified-hard.json"
	nonHardFile  = "webarena-verified/subsets/webarena-verified-non-hard.json"
	// hardChecksum is the checksum published in the hard subset file.
	hardChecksum = "d20872f9894e4e8ffc250155fe0ad5c797c640f40d3094404654a8b1dab14e68"
)

func countBy(tasks []models.Task, key func(models.Task) string) map[string]int {
	m := map[string]int{}
	for _, t := range tasks {
		m[key(t)]++
	}
	return m
}

func bySiteKey(t models.Task) string  { return t.SiteKey }
func byTaskType(t models.Task) string { return t.TaskType }

func TestParse_WebArenaVerified(t *testing.T) {
	t.Parallel()
	data := readData(t, verifiedFile)
	hard := readData(t, hardFile)

	d, err := importer.Parse(evaltest.Registry(), models.FormatWebArenaVerified, bytes.NewReader(data),
		[]importer.SubsetFile{{Name: "hard", R: bytes.NewReader(hard)}})
	require.NoError(t, err)

	t.Run("Counts", func(t *testing.T) {
		require.Equal(t, models.FormatWebArenaVerified, d.Format)
		require.Equal(t, models.EvaluatorWebArenaVerified, d.Evaluator)
		require.Len(t, d.Tasks, 812)
		require.Equal(t, map[string]int{"shopping": 187, "shopping_admin": 182, "gitlab": 180, "map": 109, "reddit": 106, models.MultiSite: 48},
			countBy(d.Tasks, bySiteKey))
		require.Equal(t, map[string]int{"mutate": 374, "retrieve": 325, "navigate": 113}, countBy(d.Tasks, byTaskType))
		require.Len(t, d.Checksum, 64)
	})
	t.Run("Sites", func(t *testing.T) {
		require.Equal(t, []importer.SiteSpec{
			{Name: "gitlab", Placeholder: "__GITLAB__"},
			{Name: "map", Placeholder: "__MAP__"},
			{Name: "reddit", Placeholder: "__REDDIT__"},
			{Name: "shopping", Placeholder: "__SHOPPING__"},
			{Name: "shopping_admin", Placeholder: "__SHOPPING_ADMIN__"},
			{Name: "wikipedia", Placeholder: "__WIKIPEDIA__"},
		}, d.Sites)
	})
	t.Run("FirstTask", func(t *testing.T) {
		task := d.Tasks[0]
		require.Equal(t, "0", task.ExternalID)
		require.Equal(t, 0, task.Position)
		require.Zero(t, task.ID)
		require.Equal(t, "Get the top-1 best-selling product name(s) in 2022", task.Intent)
		require.Equal(t, "Get the top-{{n}} best-selling {{entity}} in {{period}}", task.IntentTemplate)
		require.Equal(t, models.JSONStrings{"__SHOPPING_ADMIN__"}, task.StartURLs)
		require.Equal(t, models.JSONStrings{"shopping_admin"}, task.Sites)
		require.Equal(t, "shopping_admin", task.SiteKey)
		require.Equal(t, models.TaskRetrieve, task.TaskType)
		require.Equal(t, 2, task.Revision)
		require.JSONEq(t, `{"intent_template_id":279,"instantiation_dict":{"n":1,"entity":"product name(s)","period":"2022"}}`, task.Metadata)
		require.True(t, strings.HasPrefix(task.EvalSpec, `[{"evaluator":"AgentResponseEvaluator",`), task.EvalSpec)
		require.Contains(t, task.EvalSpec, `"retrieved_data":["Quest Lumaflex™ Band"]`)
		require.Equal(t, 811, d.Tasks[811].Position)
	})
	t.Run("HardSubset", func(t *testing.T) {
		require.Len(t, d.Subsets, 1)
		s := d.Subsets[0]
		require.Equal(t, "hard", s.Name)
		require.Equal(t, "", s.Description) // null in the file
		require.Equal(t, hardChecksum, s.Checksum)
		require.Len(t, s.ExternalIDs, 258)
		byID := map[string]models.Task{}
		for _, task := range d.Tasks {
			byID[task.ExternalID] = task
		}
		sub := make([]models.Task, 0, len(s.ExternalIDs))
		for _, id := range s.ExternalIDs {
			sub = append(sub, byID[id])
		}
		require.Equal(t, map[string]int{"shopping_admin": 55, "gitlab": 57, "reddit": 42, "shopping": 56, models.MultiSite: 48},
			countBy(sub, bySiteKey))
	})
	t.Run("HardAndNonHard", func(t *testing.T) {
		nonHard := readData(t, nonHardFile)
		both, err := importer.Parse(evaltest.Registry(), models.FormatWebArenaVerified, bytes.NewReader(data), []importer.SubsetFile{
			{Name: "non-hard", R: bytes.NewReader(nonHard)},
			{Name: "hard", R: bytes.NewReader(hard)},
		})
		require.NoError(t, err)
		require.Len(t, both.Subsets, 2)
		require.Equal(t, "hard", both.Subsets[0].Name) // sorted by name
		require.Equal(t, "non-hard", both.Subsets[1].Name)
		require.Equal(t, "Tasks not in the hard subset", both.Subsets[1].Description)
		require.Len(t, both.Subsets[1].ExternalIDs, 554)
		seen := map[string]bool{}
		for _, s := range both.Subsets {
			for _, id := range s.ExternalIDs {
				require.False(t, seen[id], "task %s in both subsets", id)
				seen[id] = true
			}
		}
		require.Len(t, seen, 812)
		require.NotEqual(t, d.Checksum, both.Checksum, "another subset is another version")
	})
	t.Run("TamperedChecksum", func(t *testing.T) {
		tampered := bytes.Replace(hard, []byte(hardChecksum), []byte(strings.Repeat("0", 64)), 1)
		require.NotEqual(t, hard, tampered)
		_, err := importer.Parse(evaltest.Registry(), models.FormatWebArenaVerified, bytes.NewReader(data),
			[]importer.SubsetFile{{Name: "hard", R: bytes.NewReader(tampered)}})
		requireError(t, err, models.EINVALID, `subset "hard": checksum mismatch: file says 0000`, "sorted task ids hash to "+hardChecksum[:12])
	})
	t.Run("TamperedIDs", func(t *testing.T) {
		var f map[string]any
		require.NoError(t, json.Unmarshal(hard, &f))
		f["task_ids"] = f["task_ids"].([]any)[1:]
		tampered, err := json.Marshal(f)
		require.NoError(t, err)
		_, err = importer.Parse(evaltest.Registry(), models.FormatWebArenaVerified, bytes.NewReader(data),
			[]importer.SubsetFile{{Name: "hard", R: bytes.NewReader(tampered)}})
		requireError(t, err, models.EINVALID, `subset "hard": checksum mismatch: file says `+hardChecksum)
	})
	t.Run("ChecksumIgnoresFormatting", func(t *testing.T) {
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, data))
		again, err := importer.Parse(evaltest.Registry(), models.FormatWebArenaVerified, &compact,
			[]importer.SubsetFile{{Name: "hard", R: bytes.NewReader(hard)}})
		require.NoError(t, err)
		require.Equal(t, d.Checksum, again.Checksum)
	})
}

func TestParse_WebArena(t *testing.T) {
	t.Parallel()
	d, err := importer.Parse(evaltest.Registry(), models.FormatWebArena, bytes.NewReader(readData(t, "webarena/test.raw.json")), nil)
	require.NoError(t, err)
	require.Equal(t, models.EvaluatorWebArena, d.Evaluator)
	require.Len(t, d.Tasks, 812)
	require.Equal(t, map[string]int{"shopping": 187, "shopping_admin": 182, "gitlab": 180, "map": 109, "reddit": 106, models.MultiSite: 48},
		countBy(d.Tasks, bySiteKey))
	require.Equal(t, map[string]int{"retrieve": 335, "mutate": 411, "navigate": 66}, countBy(d.Tasks, byTaskType))

	task := d.Tasks[0]
	require.Equal(t, "0", task.ExternalID)
	require.Equal(t, models.JSONStrings{"__SHOPPING_ADMIN__"}, task.StartURLs)
	require.Equal(t, models.TaskRetrieve, task.TaskType)
	require.JSONEq(t, `{"exact_match":"Quest Lumaflex™ Band"}`, task.ReferenceAnswers)
	require.JSONEq(t, `{"intent_template_id":279,"require_login":true,"require_reset":false,"storage_state":"./.auth/shopping_admin_state.json","geolocation":null}`, task.Metadata)
	require.Contains(t, task.EvalSpec, `"eval_types":["string_match"]`)
	for _, task := range d.Tasks {
		if task.TaskType != models.TaskRetrieve {
			continue
		}
		require.NotEmpty(t, task.ReferenceAnswers, "task %s", task.ExternalID)
	}
}

func TestParse_Odysseys(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"odysseys-sample.json", "odysseys-weighted-sample.json"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			d, err := importer.Parse(evaltest.Registry(), models.FormatOdysseys, bytes.NewReader(readData(t, "odysseys/"+file)), nil)
			require.NoError(t, err)
			require.Equal(t, models.EvaluatorRubric, d.Evaluator)
			require.Len(t, d.Tasks, 8)
			require.Equal(t, []importer.SiteSpec{
				{Name: "www.google.com", Placeholder: models.PlaceholderFor("www.google.com")},
				{Name: "www.youtube.com", Placeholder: models.PlaceholderFor("www.youtube.com")},
			}, d.Sites)
			weighted := file == "odysseys-weighted-sample.json"
			for _, task := range d.Tasks {
				require.Len(t, task.ExternalID, 40)
				require.NotEmpty(t, task.Intent)
				require.Contains(t, []string{"easy", "medium", "hard"}, task.Difficulty)
				require.Len(t, task.StartURLs, 1)
				require.Equal(t, task.Sites[0], task.SiteKey)
				require.Contains(t, task.Metadata, `"reference_length":`)
				require.GreaterOrEqual(t, len(task.RubricItems), 3)
				sum := 0.0
				for i, item := range task.RubricItems {
					require.Equal(t, "R"+strconv.Itoa(i+1), item.Key)
					require.Equal(t, i, item.Position)
					require.NotEmpty(t, item.Requirement)
					require.NotEmpty(t, item.Verification)
					if !weighted {
						require.InDelta(t, 1/float64(len(task.RubricItems)), item.Weight, 1e-12)
					}
					sum += item.Weight
				}
				require.InDelta(t, 1, sum, 1e-6, "task %s", task.ExternalID)
			}
			if weighted {
				first := d.Tasks[0]
				require.Equal(t, "ada70bfe81da1cd33bec47d79a9d279d7734a686", first.ExternalID)
				require.Equal(t, 0.24, first.RubricItems[0].Weight)
				require.Equal(t, models.JSONStrings{"Travel and Tourism > Tourist Attractions", "Community and Society > Holidays and Seasonal Events"}, first.Attributes)
				require.JSONEq(t, `{"reference_length":6,"num_categories":2}`, first.Metadata)
			}
		})
	}
}

// requireError checks that err is a *models.Error with the code and a message
// holding every part.
func requireError(t *testing.T, err error, code string, parts ...string) {
	t.Helper()
	require.Error(t, err)
	var e *models.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, code, e.Code, e.Message)
	for _, p := range parts {
		require.Contains(t, e.Message, p)
	}
}
