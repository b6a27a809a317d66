package verified

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"proctor/eval"
	"proctor/models"
)

// File names inside a task's output folder, as WebArena-Verified writes them.
const (
	AgentResponseFile = "agent_response.json"
	NetworkFile       = "network.har"
	EvalResultFile    = "eval_result.json"
	RunConfigFile     = "run_config.json"
)

// GradeFolder grades one task's output folder as `proctor eval
// webarena-verified` does: dir/agent_response.json is the agent's final
// answer and dir/network.har its network log. sites gives the site URLs; when
// empty, the folder's run_config.json gives them, else they are inferred from
// the HAR. A missing or unreadable file is an error result naming it, never a
// Go error; only a canceled context is one.
func GradeFolder(ctx context.Context, ev *Evaluator, task DatasetTask, dir string, sites Sites) (TaskResult, error) {
	answer, err := os.ReadFile(filepath.Join(dir, AgentResponseFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ErrorTaskResult(task, fmt.Sprintf("no %s in %s", AgentResponseFile, dir), ev.version()), nil
	case err != nil:
		return ErrorTaskResult(task, fmt.Sprintf("read %s: %v", AgentResponseFile, err), ev.version()), nil
	}
	harPath := filepath.Join(dir, NetworkFile)
	haveHAR := true
	if _, err := os.Stat(harPath); err != nil {
		haveHAR = false
	}
	if len(sites) == 0 {
		if rc, err := readSitesConfigFile(filepath.Join(dir, RunConfigFile)); err == nil {
			sites = rc
		} else if haveHAR {
			if f, err := os.Open(harPath); err == nil {
				sites, _ = InferSites(f, task.Sites)
				f.Close()
			}
		}
	}
	in := eval.Input{Task: task.Task(), Final: &models.Action{Type: models.ActAnswer, Text: string(answer)}}
	if haveHAR {
		f, err := os.Open(harPath)
		if err != nil {
			return ErrorTaskResult(task, fmt.Sprintf("open %s: %v", NetworkFile, err), ev.version()), nil
		}
		defer f.Close()
		in.HAR = f
	}
	r, err := ev.WithSites(sites).Evaluate(ctx, in)
	if err != nil {
		return TaskResult{}, err
	}
	d, err := eval.ParseDetails(r.Details)
	if err != nil {
		return TaskResult{}, fmt.Errorf("task %d: %w", task.TaskID, err)
	}
	return NewTaskResult(task, d, ev.version()), nil
}

// ReadSitesConfigFile reads the site URLs of a WebArena-Verified config file
// (see ReadSitesConfig).
func ReadSitesConfigFile(path string) (Sites, error) { return readSitesConfigFile(path) }

func readSitesConfigFile(path string) (Sites, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadSitesConfig(f)
}
