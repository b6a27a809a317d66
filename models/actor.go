package models

import "context"

// Actor is who is acting: a signed-in user (through a session or an API token) or
// nobody. Storage methods read it from the context to enforce permissions, so every
// entry point — page, API, CLI — gets the same checks.
type Actor struct {
	UserID  int64
	Email   string
	Name    string
	IsAdmin bool
	// IP is the client address of the request, for the audit log.
	IP string
	// System marks trusted internal callers (CLI verbs run by the operator, jobs).
	System bool
}

// SignedIn reports whether the actor is a user or the system.
func (a Actor) SignedIn() bool { return a.UserID != 0 || a.System }

// Privileged reports whether the actor may bypass team permissions.
func (a Actor) Privileged() bool { return a.IsAdmin || a.System }

type actorKey struct{}

// WithActor returns a context carrying the actor.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the context's actor, or the anonymous zero Actor.
func ActorFrom(ctx context.Context) Actor {
	a, _ := ctx.Value(actorKey{}).(Actor)
	return a
}

// SystemActor is the actor of CLI verbs and background jobs.
func SystemActor() Actor { return Actor{System: true, Name: "system"} }

// RequireUser returns EUNAUTHORIZED when nobody is signed in.
func RequireUser(ctx context.Context) (Actor, error) {
	a := ActorFrom(ctx)
	if !a.SignedIn() {
		return a, Errorf(EUNAUTHORIZED, "You must be signed in.")
	}
	return a, nil
}

// RequireAdmin returns EUNAUTHORIZED for anonymous actors and EFORBIDDEN for
// signed-in non-admins.
func RequireAdmin(ctx context.Context) (Actor, error) {
	a, err := RequireUser(ctx)
	if err != nil {
		return a, err
	}
	if !a.Privileged() {
		return a, Errorf(EFORBIDDEN, "Only administrators may do this.")
	}
	return a, nil
}
