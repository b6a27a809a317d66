package importer

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/models"
)

// These tests shrink the limits so refusing oversized input costs no memory.
func TestParse_Limits(t *testing.T) {
	t.Parallel()
	small := limits{input: 200, line: 80}
	task := `{"id": "t1", "intent": "Find it."}`

	requireTooLarge := func(t *testing.T, err error, part string) {
		t.Helper()
		require.Error(t, err)
		require.Equal(t, models.ETOOLARGE, models.ErrorCode(err), err.Error())
		require.Contains(t, models.ErrorMessage(err), part)
	}

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, limits{input: 256 << 20, line: 16 << 20}, defaultLimits())
	})
	t.Run("JSONArrayInput", func(t *testing.T) {
		t.Parallel()
		input := "[" + strings.Repeat(" ", 300) + "]"
		_, err := parse(bareKinds, models.FormatWebArenaVerified, strings.NewReader(input), nil, small)
		requireTooLarge(t, err, "input: larger than 200 bytes")
	})
	t.Run("JSONLinesInput", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		for i := 0; i < 10; i++ {
			b.WriteString(`{"id": "t` + string(rune('0'+i)) + `", "intent": "Find it."}` + "\n")
		}
		_, err := parse(bareKinds, models.FormatProctor, strings.NewReader(b.String()), nil, small)
		requireTooLarge(t, err, "input: larger than 200 bytes")
	})
	t.Run("Line", func(t *testing.T) {
		t.Parallel()
		long := `{"id": "t2", "intent": "` + strings.Repeat("x", 60) + `"}`
		_, err := parse(bareKinds, models.FormatProctor, strings.NewReader(task+"\n"+long+"\n"), nil, small)
		requireTooLarge(t, err, "line 2: longer than 80 bytes")
		// Exactly at the limit, with a CRLF ending, is fine.
		exact := `{"id": "t2", "intent": "` + strings.Repeat("x", 80-len(`{"id": "t2", "intent": ""}`)) + `"}`
		require.Len(t, exact, 80)
		_, err = parse(bareKinds, models.FormatProctor, strings.NewReader(exact+"\r\n"), nil, small)
		require.NoError(t, err)
	})
	t.Run("SubsetFile", func(t *testing.T) {
		t.Parallel()
		sub := SubsetFile{Name: "hard", R: strings.NewReader(`{"task_ids": ["t1"]` + strings.Repeat(" ", 300) + `}`)}
		_, err := parse(bareKinds, models.FormatProctor, strings.NewReader(task), []SubsetFile{sub}, small)
		requireTooLarge(t, err, `subset "hard": larger than 200 bytes`)
	})
	t.Run("ReadsThroughLimitReader", func(t *testing.T) {
		t.Parallel()
		// An endless input is refused rather than read forever.
		_, err := parse(bareKinds, models.FormatOdysseys, io.MultiReader(strings.NewReader("["), endless{}), nil, small)
		requireTooLarge(t, err, "input: larger than 200 bytes")
		_, err = parse(bareKinds, models.FormatProctor, io.MultiReader(strings.NewReader(task+"\n"), endless{}), nil, limits{input: 1 << 20, line: 80})
		requireTooLarge(t, err, "line 2: longer than 80 bytes")
	})
	t.Run("ByteOrderMark", func(t *testing.T) {
		t.Parallel()
		d, err := parse(bareKinds, models.FormatProctor, strings.NewReader("\xef\xbb\xbf"+task), nil, defaultLimits())
		require.NoError(t, err)
		require.Len(t, d.Tasks, 1)
	})
}

// endless is a reader of spaces that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// bareKinds knows the evaluators the limits' inputs name, with no spec checks:
// these tests are about sizes.
var bareKinds = func() *eval.Registry {
	r, err := eval.NewRegistry(eval.None(), eval.Kind{ID: models.EvaluatorRubric}, eval.Kind{ID: models.EvaluatorWebArenaVerified},
		eval.Kind{ID: models.EvaluatorWebArena})
	if err != nil {
		panic(err)
	}
	return r
}()
