package agreement_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/agreement"
)

func TestSpec_Parse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		label agreement.Label
		raw   string
		want  string
	}{
		{agreement.LabelSuccess, "Successful", "successful"},
		{agreement.LabelSuccess, "  UNSUCCESSFUL ", "unsuccessful"},
		{agreement.LabelSuccess, "Unsure", agreement.Unsure},
		{agreement.LabelSuccess, "success", "successful"},
		{agreement.LabelSuccess, "Failure", "unsuccessful"},
		{agreement.LabelSuccess, "", ""},
		{agreement.LabelSuccess, "   ", ""},
		{agreement.LabelSideEffect, "Yes", "yes"},
		{agreement.LabelSideEffect, "no", "no"},
		{agreement.LabelSideEffect, "unsure", agreement.Unsure},
		{agreement.LabelLooping, "NO", "no"},
		// AgentRewardBench's annotations.csv answers Unsure in these columns
		// too; any case and surrounding spaces read alike.
		{agreement.LabelLooping, "Unsure", agreement.Unsure},
		{agreement.LabelLooping, " UNSURE ", agreement.Unsure},
		{agreement.LabelOptimality, "Unsure", agreement.Unsure},
		{agreement.LabelOptimality, "unsure ", agreement.Unsure},
		{agreement.LabelSideEffect, "  Unsure", agreement.Unsure},
		{agreement.LabelSuccess, "UNSURE", agreement.Unsure},
		{agreement.LabelOptimality, "2. Suboptimal", "2"},
		{agreement.LabelOptimality, "1. Complete Failure", "1"},
		{agreement.LabelOptimality, "3. somewhat optimal", "3"},
		{agreement.LabelOptimality, "4. Completely Optimal", "4"},
		{agreement.LabelOptimality, "4", "4"},
		{agreement.LabelOptimality, "4.", "4"},
		{agreement.LabelOptimality, "4.0", "4"},
		{agreement.LabelOptimality, "Suboptimal", "2"},
		{agreement.LabelOptimality, "completely optimal", "4"},
		{agreement.LabelScore, "5", "5"},
		{agreement.LabelScore, "1", "1"},
		{agreement.LabelScore, "3.0", "3"},
		{agreement.LabelRubric, "Pass", "pass"},
		{agreement.LabelRubric, " FAIL", "fail"},
		{agreement.LabelRubric, "passed", "pass"},
	} {
		t.Run(string(tc.label)+"/"+tc.raw, func(t *testing.T) {
			t.Parallel()
			spec, ok := agreement.SpecOf(tc.label)
			require.True(t, ok)
			got, err := spec.Parse(tc.raw)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			label agreement.Label
			raw   string
			want  string
		}{
			{agreement.LabelSuccess, "Maybe", `trajectory_success: unknown value "Maybe" (allowed: Successful, Unsuccessful, Unsure)`},
			{agreement.LabelSuccess, "yes", `trajectory_success: unknown value "yes"`},
			{agreement.LabelSideEffect, "Sometimes", `trajectory_side_effect: unknown value "Sometimes" (allowed: Yes, No, Unsure)`},
			{agreement.LabelLooping, "Maybe", `trajectory_looping: unknown value "Maybe" (allowed: Yes, No, Unsure)`},
			{agreement.LabelOptimality, "Partially optimal", `trajectory_optimality: unknown value "Partially optimal" (allowed: 1. Complete Failure, 2. Suboptimal, 3. Somewhat Optimal, 4. Completely Optimal, Unsure)`},
			{agreement.LabelOptimality, "5. Perfect", `trajectory_optimality: "5. Perfect": 5 is out of range (allowed: 1. Complete Failure, 2. Suboptimal, 3. Somewhat Optimal, 4. Completely Optimal, Unsure)`},
			{agreement.LabelOptimality, "Unsure.", `trajectory_optimality: unknown value "Unsure."`},
			{agreement.LabelOptimality, "0", `0 is out of range`},
			{agreement.LabelOptimality, "2. Completely Optimal", `the number 2 and the name "completely optimal" disagree`},
			{agreement.LabelOptimality, "2.5", `not a whole number`},
			{agreement.LabelOptimality, "optimal", `unknown value "optimal"`},
			{agreement.LabelScore, "6", `trajectory_score: "6": 6 is out of range (allowed: 1, 2, 3, 4, 5)`},
			{agreement.LabelScore, "-1", `trajectory_score: unknown value "-1"`},
			{agreement.LabelScore, "Unsure", `trajectory_score: "Unsure" is not allowed: this label has no unsure answer (allowed: 1, 2, 3, 4, 5)`},
			{agreement.LabelRubric, "Unsure", `rubric_pass: "Unsure" is not allowed: this label has no unsure answer (allowed: Pass, Fail)`},
			{agreement.LabelRubric, "yes", `rubric_pass: unknown value "yes"`},
		} {
			spec, _ := agreement.SpecOf(tc.label)
			got, err := spec.Parse(tc.raw)
			require.Error(t, err, "%s %q gave %q", tc.label, tc.raw, got)
			require.Contains(t, err.Error(), tc.want)
		}
	})
}

func TestSpecOf(t *testing.T) {
	t.Parallel()
	for _, l := range agreement.Labels() {
		spec, ok := agreement.SpecOf(l)
		require.True(t, ok, l)
		require.Equal(t, l, spec.Label)
		require.Len(t, spec.Display, len(spec.Categories))
		for i, c := range spec.Categories {
			// Every category reads back from its own and its display spelling.
			for _, raw := range []string{c, spec.Display[i]} {
				got, err := spec.Parse(raw)
				require.NoError(t, err)
				require.Equal(t, c, got)
			}
			code, ok := spec.Code(c)
			require.True(t, ok)
			require.Equal(t, i, code)
			require.Equal(t, spec.Display[i], spec.DisplayOf(c))
		}
		_, ok = spec.Code(agreement.Unsure)
		require.False(t, ok, "unsure is not a category")
		if spec.AllowsUnsure {
			require.True(t, spec.ReadsUnsure, "%s: an answer the form offers is read back", l)
		}
		require.Equal(t, spec.Ordinal, spec.Positive < 0, "binary labels have a positive class, ordinal ones none")
	}
	_, ok := agreement.SpecOf("mood")
	require.False(t, ok)

	t.Run("Unsure", func(t *testing.T) {
		t.Parallel()
		// Every column of AgentRewardBench's annotations.csv reads Unsure;
		// the annotation form offers it for success and side effect only.
		for l, want := range map[agreement.Label][2]bool{
			agreement.LabelSuccess: {true, true}, agreement.LabelSideEffect: {true, true},
			agreement.LabelOptimality: {true, false}, agreement.LabelLooping: {true, false},
			agreement.LabelScore: {false, false}, agreement.LabelRubric: {false, false},
		} {
			spec, _ := agreement.SpecOf(l)
			require.Equal(t, want, [2]bool{spec.ReadsUnsure, spec.AllowsUnsure}, "%s: reads, offers", l)
		}
	})
}
