package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// TestRedactEvaluations shows the judge's key and the agent's secrets
// removed from every verdict's details and rubric rationales before they
// are recorded.
func TestRedactEvaluations(t *testing.T) {
	t.Parallel()
	const judgeKey, token = "sk-judge-0123456789", "tok-agent-98765"
	red := secretsRedactor(map[string]string{"AGENT_TOKEN": token}, judgeKey)
	batch := models.EvaluationBatch{
		Primary: &models.Evaluation{Details: `{"error_msg": "401: Incorrect API key provided: ` + judgeKey + `"}`},
		Others: []*models.Evaluation{nil, {
			Details:         `{"rationale": "the agent typed ` + token + ` into the search box"}`,
			RubricJudgments: []models.RubricJudgment{{Rationale: "step 3 shows " + token}},
		}},
	}
	redactEvaluations(red, &batch)
	require.JSONEq(t, `{"error_msg": "401: Incorrect API key provided: [redacted]"}`, batch.Primary.Details)
	require.JSONEq(t, `{"rationale": "the agent typed [redacted] into the search box"}`, batch.Others[1].Details)
	require.Equal(t, "step 3 shows [redacted]", batch.Others[1].RubricJudgments[0].Rationale)
}
