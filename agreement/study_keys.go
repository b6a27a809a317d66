package agreement

import (
	"fmt"

	"proctor/models"
)

// StudyKeys names a study's items the AgentRewardBench way, as exports write
// them and imports match them: the benchmark slug, the run's model (the
// agent's name when the run names no model) and the task id. Two items that
// would share a key (two runs of one model on the same task) both get the run
// in the model name, "gpt-4o (run 12)", so every item keeps a key of its own.
func StudyKeys(items []models.StudyDataItem) map[int64]Key {
	base := func(it models.StudyDataItem) Key {
		model := it.Model
		if model == "" {
			model = it.Agent
		}
		return Key{Benchmark: it.Benchmark, Model: model, TaskID: it.TaskID}
	}
	count := map[Key]int{}
	for _, it := range items {
		count[base(it)]++
	}
	keys := make(map[int64]Key, len(items))
	for _, it := range items {
		k := base(it)
		if count[k] > 1 {
			k.Model = fmt.Sprintf("%s (run %d)", k.Model, it.RunID)
		}
		keys[it.ItemID] = k
	}
	return keys
}
