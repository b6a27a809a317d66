package models

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestErrorProblems(t *testing.T) {
	t.Parallel()
	a, b, c := FieldError("a", "first"), FieldError("b", "second"), Errorf(ECONFLICT, "third")
	fields := func(list []*Error) []string {
		var out []string
		for _, e := range list {
			out = append(out, e.Field+":"+e.Message)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"Nil", nil, nil},
		{"Internal", errors.New("disk full"), nil},
		{"One", a, []string{"a:first"}},
		{"Wrapped", fmt.Errorf("saving: %w", a), []string{"a:first"}},
		{"Joined", errors.Join(a, b), []string{"a:first", "b:second"}},
		{"WrappedJoin", fmt.Errorf("submitting: %w", errors.Join(a, b)), []string{"a:first", "b:second"}},
		{"NestedInOrder", errors.Join(errors.Join(a, c), fmt.Errorf("x: %w", b)), []string{"a:first", ":third", "b:second"}},
		{"InternalAmongThem", errors.Join(a, errors.New("disk full"), b), nil},
		{"InternalWrappingOne", fmt.Errorf("saving: %w", errors.Join(a, fmt.Errorf("no %s", "reason"))), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, fields(ErrorProblems(tc.err)))
		})
	}
}
