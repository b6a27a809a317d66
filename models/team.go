package models

// TeamSummary is a team with its member count, for listings.
type TeamSummary struct {
	Team
	MemberCount int
}

// TeamDetail is what a team's page shows to the context's actor.
type TeamDetail struct {
	Team Team
	// Members (with their User) are filled only when MembersVisible.
	Members        []Membership
	MembersVisible bool
	// Viewer is the actor's own membership, nil when the actor is not a member.
	Viewer *Membership
	// CanManage reports whether the actor may invite, remove and change roles
	// (an owner of the team or an administrator).
	CanManage bool
}

// InviteDetail is an invitation with the team it leads to.
type InviteDetail struct {
	Invite TeamInvite
	Team   Team
}
