package service_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// The services' authorization tables (one *_authz_test.go per service) call
// each read and write as each kind of caller and check what they get.

// outcome is what one caller gets from one operation: the error code ("" for
// none) and, when check is set, a look at what an allowed caller was shown.
type outcome struct {
	code  string
	check func(t *testing.T, got any)
}

// callerOutcomes is what each of a table's five callers gets: an anonymous
// visitor, a member of the team, a member of another team, an administrator
// and a blind annotator of a study over the team's runs.
type callerOutcomes struct{ anon, member, other, admin, blind outcome }

// tableCallers are the five callers' contexts.
type tableCallers struct{ anon, member, other, admin, blind context.Context }

// authzOp is one service call of a table and what each caller gets from it.
type authzOp struct {
	name string
	call func(ctx context.Context) (any, error)
	want callerOutcomes
}

// checkAuthzTable calls every operation as each caller, in a fixed order
// (anonymous, blind annotator, other team, member, administrator), and
// checks the error code and, for an allowed call, what was shown. also, when
// set, looks further at each call's error.
func checkAuthzTable(t *testing.T, ops []authzOp, who tableCallers, also func(t *testing.T, op, caller string, err error)) {
	t.Helper()
	for _, op := range ops {
		for _, c := range []struct {
			name string
			ctx  context.Context
			want outcome
		}{
			{"anonymous", who.anon, op.want.anon},
			{"blind annotator", who.blind, op.want.blind},
			{"other team", who.other, op.want.other},
			{"member", who.member, op.want.member},
			{"admin", who.admin, op.want.admin},
		} {
			got, err := op.call(c.ctx)
			require.Equal(t, c.want.code, models.ErrorCode(err), "%s as %s: %v", op.name, c.name, err)
			if also != nil {
				also(t, op.name, c.name, err)
			}
			if err == nil && c.want.check != nil {
				c.want.check(t, got)
			}
		}
	}
}
