package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
)

var invitePattern = regexp.MustCompile(`/invites/(inv_[A-Za-z0-9_-]{43})`)

// teamFixture is a fresh team with an owner and a member, a pending invitation
// (by the owner) and an API token of the member.
type teamFixture struct {
	slug     string
	memberID int64
	invite   string
	tokenID  int64
}

// newTeamFixture creates a team owned by owner with member in it.
func newTeamFixture(t *testing.T, b *testBundle, owner, member *client, n int64) teamFixture {
	t.Helper()
	team, err := servicetest.Teams(b.db).CreateTeam(actorCtx(owner), fmt.Sprintf("Fixture %d", n), "", "")
	require.NoError(t, err)
	_, join, err := servicetest.Teams(b.db).CreateTeamInvite(actorCtx(owner), team.Slug, models.RoleMember)
	require.NoError(t, err)
	_, err = servicetest.Teams(b.db).AcceptTeamInvite(actorCtx(member), join)
	require.NoError(t, err)
	_, invite, err := servicetest.Teams(b.db).CreateTeamInvite(actorCtx(owner), team.Slug, models.RoleMember)
	require.NoError(t, err)
	tok, _, err := servicetest.Teams(b.db).CreateAPIToken(actorCtx(member), fmt.Sprintf("fixture %d", n))
	require.NoError(t, err)
	return teamFixture{slug: team.Slug, memberID: member.user.ID, invite: invite, tokenID: tok.ID}
}

func (f teamFixture) expand(s string) string {
	return strings.NewReplacer("{slug}", f.slug, "{member}", strconv.FormatInt(f.memberID, 10),
		"{invite}", f.invite, "{token}", strconv.FormatInt(f.tokenID, 10)).Replace(s)
}

// TestAuthz_Teams checks every account and team route for each kind of caller:
// anonymous, a member of the team, its owner, a member of another team only, and
// an administrator. Each check runs against fresh data.
func TestAuthz_Teams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.newUser(t, "owner@example.org", false)
	member := b.newUser(t, "member@example.org", false)
	outsider := b.newUser(t, "outsider@example.org", false)
	_, err := servicetest.Teams(b.db).CreateTeam(actorCtx(outsider), "Elsewhere", "", "")
	require.NoError(t, err)
	clients := map[string]*client{
		"anonymous": b.anonymous(t), "member": member, "owner": owner, "outsider": outsider, "admin": b.admin,
	}
	apiClients := map[string]*client{"anonymous": clients["anonymous"]}
	for name, c := range clients {
		if name != "anonymous" {
			apiClients[name] = withToken(t, b, c)
		}
	}
	var seq atomic.Int64

	all := func(status int) map[string]int {
		return map[string]int{"anonymous": status, "member": status, "owner": status, "outsider": status, "admin": status}
	}
	signedIn := func(anon, others int) map[string]int {
		return map[string]int{"anonymous": anon, "member": others, "owner": others, "outsider": others, "admin": others}
	}
	const (
		ok, created, noContent, see = http.StatusOK, http.StatusCreated, http.StatusNoContent, http.StatusSeeOther
		unauth, forbidden, notFound = http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound
		conflict                    = http.StatusConflict
	)
	for _, tc := range []authzCase{
		// Pages.
		{method: "GET", path: "/account", want: signedIn(see, ok)},
		{method: "GET", path: "/account/password", want: signedIn(see, ok)},
		{method: "POST", path: "/account/password", form: url.Values{"current_password": {"not the password"}, "new_password": {"a new long password"}},
			want: signedIn(unauth, http.StatusBadRequest)},
		{method: "POST", path: "/account/tokens", form: url.Values{"name": {"token {n}"}}, want: signedIn(unauth, ok)},
		{method: "POST", path: "/account/tokens/{token}/revoke", want: map[string]int{"anonymous": unauth, "member": see, "owner": notFound, "outsider": notFound, "admin": notFound}},
		{method: "GET", path: "/teams", want: all(ok)},
		{method: "POST", path: "/teams", form: url.Values{"name": {"Team {n}"}}, want: signedIn(unauth, see)},
		{method: "GET", path: "/teams/{slug}", want: all(ok)},
		{method: "GET", path: "/teams/no-such-team", want: all(notFound)},
		{method: "POST", path: "/teams/{slug}/invites", form: url.Values{"role": {"member"}}, want: map[string]int{"anonymous": unauth, "member": forbidden, "owner": ok, "outsider": forbidden, "admin": ok}},
		{method: "GET", path: "/invites/{invite}", want: map[string]int{"anonymous": see, "member": conflict, "owner": conflict, "outsider": ok, "admin": ok}},
		{method: "POST", path: "/invites/{invite}", want: map[string]int{"anonymous": unauth, "member": conflict, "owner": conflict, "outsider": see, "admin": see}},
		{method: "POST", path: "/teams/{slug}/members/{member}/remove", want: map[string]int{"anonymous": unauth, "member": forbidden, "owner": see, "outsider": forbidden, "admin": see}},
		{method: "POST", path: "/teams/{slug}/leave", want: map[string]int{"anonymous": unauth, "member": see, "owner": conflict, "outsider": forbidden, "admin": forbidden}},
		{method: "POST", path: "/teams/{slug}/members/{member}/role", form: url.Values{"role": {"owner"}}, want: map[string]int{"anonymous": unauth, "member": forbidden, "owner": see, "outsider": forbidden, "admin": see}},
		// JSON API.
		{method: "GET", path: "/api/v1/me", want: signedIn(unauth, ok)},
		{method: "GET", path: "/api/v1/tokens", want: signedIn(unauth, ok)},
		{method: "POST", path: "/api/v1/tokens", json: `{"name":"api {n}"}`, want: signedIn(unauth, created)},
		{method: "DELETE", path: "/api/v1/tokens/{token}", want: map[string]int{"anonymous": unauth, "member": ok, "owner": notFound, "outsider": notFound, "admin": notFound}},
		{method: "GET", path: "/api/v1/teams", want: all(ok)},
		{method: "POST", path: "/api/v1/teams", json: `{"name":"API team {n}"}`, want: signedIn(unauth, created)},
		{method: "GET", path: "/api/v1/teams/{slug}", want: all(ok)},
		{method: "POST", path: "/api/v1/teams/{slug}/invites", json: `{"role":"member"}`, want: map[string]int{"anonymous": unauth, "member": forbidden, "owner": created, "outsider": forbidden, "admin": created}},
		{method: "DELETE", path: "/api/v1/teams/{slug}/members/{member}", want: map[string]int{"anonymous": unauth, "member": forbidden, "owner": noContent, "outsider": forbidden, "admin": noContent}},
	} {
		for _, actor := range []string{"anonymous", "member", "owner", "outsider", "admin"} {
			want, listed := tc.want[actor]
			require.True(t, listed, "%s %s: no expectation for %s", tc.method, tc.path, actor)
			t.Run(tc.method+" "+tc.path+" as "+actor, func(t *testing.T) {
				n := seq.Add(1)
				f := newTeamFixture(t, b, owner, member, n)
				row := tc
				row.path = f.expand(tc.path)
				c := clients[actor]
				if strings.HasPrefix(row.path, "/api/") {
					c = apiClients[actor]
				}
				res := c.send(row, strconv.FormatInt(n, 10))
				path := row.path
				require.Equal(t, want, res.StatusCode, "%s %s as %s: %s", tc.method, path, actor, readBody(t, res))
				if want == see && tc.method == http.MethodGet {
					require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/login?next="), res.Header.Get("Location"))
				}
			})
		}
	}
}

func TestTeams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.newUser(t, "olga@example.org", false)
	member := b.newUser(t, "mike@example.org", false)
	outsider := b.newUser(t, "otto@example.org", false)
	anon := b.anonymous(t)

	res := owner.postForm("/teams", url.Values{"name": {"Browser Bots"}, "description": {"We <3 agents"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/teams/browser-bots?notice=team-created", res.Header.Get("Location"))

	t.Run("CreatedSaysWhatNext", func(t *testing.T) {
		body := readBody(t, owner.get("/teams/browser-bots?notice=team-created"))
		require.Contains(t, body, "Team created.")
		require.Contains(t, body, `data-testid="team-next-steps"`)
		require.Contains(t, body, `href="/teams/browser-bots/agents/new"`)
		require.Contains(t, body, `href="/teams/browser-bots/runs/new"`)
		require.NotContains(t, readBody(t, outsider.get("/teams/browser-bots?notice=team-created")), `data-testid="team-next-steps"`,
			"only who can manage the team is shown what to do with it")
	})

	t.Run("List", func(t *testing.T) {
		body := readBody(t, anon.get("/teams"))
		require.Contains(t, body, `data-testid="team-row"`)
		require.Contains(t, body, `href="/teams/browser-bots"`)
		require.Contains(t, body, `data-testid="member-count">1<`)
		require.Contains(t, body, "We &lt;3 agents")
		require.NotContains(t, body, `data-testid="create-team-form"`, "anonymous visitors get a log-in link instead")
		require.Contains(t, readBody(t, outsider.get("/teams")), `data-testid="create-team-form"`)
		require.Equal(t, http.StatusBadRequest, anon.get("/teams?page=0").StatusCode)
	})
	t.Run("CreateErrors", func(t *testing.T) {
		res := owner.postForm("/teams", url.Values{"name": {""}})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), `data-testid="error-name"`)
		res = outsider.postForm("/teams", url.Values{"name": {"Browser   bots!"}})
		require.Equal(t, http.StatusConflict, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, `data-testid="error-slug"`)
		require.Contains(t, body, "already exists")
		require.Contains(t, body, `value="Browser   bots!"`, "the form keeps what was typed")
		res = outsider.postForm("/teams", url.Values{"name": {"Fine"}, "slug": {"-bad-"}})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), `data-testid="error-slug"`)
		res = outsider.postForm("/teams", url.Values{"name": {strings.Repeat("x", 101)}})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
	})

	var link string
	t.Run("InviteShownOnce", func(t *testing.T) {
		res := owner.postForm("/teams/browser-bots/invites", url.Values{"role": {"member"}})
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
		body := readBody(t, res)
		require.Contains(t, body, `data-testid="invite-link"`)
		m := invitePattern.FindStringSubmatch(body)
		require.NotNil(t, m)
		require.Equal(t, 1, strings.Count(body, m[1]))
		require.Contains(t, body, b.srv.URL+"/invites/"+m[1], "the link is absolute")
		link = m[0]
		require.NotContains(t, readBody(t, owner.get("/teams/browser-bots")), m[1])

		res = owner.postForm("/teams/browser-bots/invites", url.Values{"role": {"admiral"}})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), `data-testid="form-error"`)
	})
	t.Run("AcceptInvite", func(t *testing.T) {
		res := anon.get(link)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/login?next="+url.QueryEscape(link), res.Header.Get("Location"))

		res = member.get(link)
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, `data-testid="accept-invite-form"`)
		require.Contains(t, body, "Join Browser Bots")

		res = member.postForm(link, nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/teams/browser-bots?notice=joined", res.Header.Get("Location"))
		require.Contains(t, readBody(t, member.get("/teams/browser-bots?notice=joined")), "You joined the team.")

		res = outsider.postForm(link, nil)
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), "already been used")
		res = outsider.get(link)
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), "already been used")
		require.Equal(t, http.StatusNotFound, outsider.get("/invites/inv_nope").StatusCode)
	})
	t.Run("ExpiredInvite", func(t *testing.T) {
		d, plain, err := servicetest.Teams(b.db).CreateTeamInvite(actorCtx(owner), "browser-bots", models.RoleMember)
		require.NoError(t, err)
		require.NoError(t, b.db.Gorm().Model(&d.Invite).Update("expires_at", time.Now().UTC().Add(-time.Minute)).Error)
		res := outsider.get("/invites/" + plain)
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), "This invitation has expired")
		res = outsider.postForm("/invites/"+plain, nil)
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), "This invitation has expired")
	})
	t.Run("MembersVisibleToMembersAndAdmins", func(t *testing.T) {
		for _, tc := range []struct {
			who     *client
			members bool
			manage  bool
		}{{anon, false, false}, {outsider, false, false}, {member, true, false}, {owner, true, true}, {b.admin, true, true}} {
			res := tc.who.get("/teams/browser-bots")
			require.Equal(t, http.StatusOK, res.StatusCode)
			body := readBody(t, res)
			require.Contains(t, body, `data-testid="team-name">Browser Bots<`)
			require.Contains(t, body, `href="/teams/browser-bots/agents"`)
			require.Equal(t, tc.members, strings.Contains(body, `data-testid="members-table"`))
			require.Equal(t, tc.members, strings.Contains(body, "mike@example.org"))
			require.Equal(t, !tc.members, strings.Contains(body, `data-testid="members-hidden"`))
			require.Equal(t, tc.manage, strings.Contains(body, `data-testid="create-invite-form"`))
			require.Equal(t, tc.manage, strings.Contains(body, `data-testid="member-remove-form"`))
		}
	})
	t.Run("LastOwnerProtected", func(t *testing.T) {
		res := owner.postForm("/teams/browser-bots/leave", nil)
		require.Equal(t, http.StatusConflict, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, `data-testid="form-error"`)
		require.Contains(t, body, "last owner")
		path := "/teams/browser-bots/members/" + strconv.FormatInt(owner.user.ID, 10)
		res = owner.postForm(path+"/remove", nil)
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), "last owner")
		res = b.admin.postForm(path+"/role", url.Values{"role": {"member"}})
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), "last owner")
	})
	t.Run("RolesRemoveLeave", func(t *testing.T) {
		mpath := "/teams/browser-bots/members/" + strconv.FormatInt(member.user.ID, 10)
		require.Equal(t, http.StatusSeeOther, owner.postForm(mpath+"/role", url.Values{"role": {"owner"}}).StatusCode)
		require.Contains(t, readBody(t, member.get("/teams/browser-bots")), `data-testid="create-invite-form"`, "the new owner manages the team")
		require.Equal(t, http.StatusSeeOther, owner.postForm("/teams/browser-bots/leave", nil).StatusCode, "a second owner exists now")
		require.Contains(t, readBody(t, owner.get("/teams/browser-bots")), `data-testid="members-hidden"`)
		require.Equal(t, http.StatusNotFound, member.postForm("/teams/browser-bots/members/"+strconv.FormatInt(owner.user.ID, 10)+"/remove", nil).StatusCode)
		require.Equal(t, http.StatusNotFound, member.postForm("/teams/browser-bots/members/x/remove", nil).StatusCode)

		var events []models.AuditEvent
		require.NoError(t, b.db.Gorm().Order("id").Find(&events).Error)
		var actions []string
		for _, e := range events {
			actions = append(actions, e.Action)
		}
		for _, want := range []string{"team.created", "invite.created", "invite.accepted", "member.role_changed", "member.left"} {
			require.Contains(t, actions, want)
		}
	})
}

func TestAPI_Teams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := withToken(t, b, b.newUser(t, "own@example.org", false))
	member := withToken(t, b, b.newUser(t, "mem@example.org", false))
	outsider := withToken(t, b, b.newUser(t, "out@example.org", false))
	admin := withToken(t, b, b.admin)

	res := owner.api(http.MethodPost, "/api/v1/teams", map[string]string{"name": "Zeta Agents", "description": "z"})
	require.Equal(t, http.StatusCreated, res.StatusCode)
	var team struct {
		ID          int64  `json:"id"`
		Slug        string `json:"slug"`
		Name        string `json:"name"`
		Description string `json:"description"`
		CreatedAt   string `json:"created_at"`
	}
	decodeJSON(t, res, &team)
	require.Equal(t, "zeta-agents", team.Slug)
	require.NotEmpty(t, team.CreatedAt)

	t.Run("CreateErrors", func(t *testing.T) {
		res := outsider.api(http.MethodPost, "/api/v1/teams", map[string]string{"name": "Other", "slug": "zeta-agents"})
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), `"code":"conflict"`)
		res = outsider.api(http.MethodPost, "/api/v1/teams", map[string]string{"name": ""})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), `"code":"invalid"`)
		res = outsider.api(http.MethodPost, "/api/v1/teams", map[string]any{"name": 3})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
	})
	t.Run("InviteAndJoin", func(t *testing.T) {
		res := owner.api(http.MethodPost, "/api/v1/teams/zeta-agents/invites", nil)
		require.Equal(t, http.StatusCreated, res.StatusCode)
		var inv struct {
			URL       string `json:"url"`
			Team      string `json:"team"`
			Role      string `json:"role"`
			ExpiresAt string `json:"expires_at"`
		}
		decodeJSON(t, res, &inv)
		require.Equal(t, "member", inv.Role)
		require.Equal(t, "zeta-agents", inv.Team)
		m := invitePattern.FindStringSubmatch(inv.URL)
		require.NotNil(t, m, inv.URL)
		require.True(t, strings.HasPrefix(inv.URL, b.srv.URL+"/invites/"))
		_, err := servicetest.Teams(b.db).AcceptTeamInvite(actorCtx(member), m[1])
		require.NoError(t, err)

		res = owner.api(http.MethodPost, "/api/v1/teams/zeta-agents/invites", map[string]string{"role": "owner"})
		require.Equal(t, http.StatusCreated, res.StatusCode)
		res = owner.api(http.MethodPost, "/api/v1/teams/zeta-agents/invites", map[string]string{"role": "captain"})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
	})
	t.Run("List", func(t *testing.T) {
		_, err := servicetest.Teams(b.db).CreateTeam(actorCtx(outsider), "Alpha", "", "")
		require.NoError(t, err)
		res := outsider.api(http.MethodGet, "/api/v1/teams?per_page=1", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		var page struct {
			Items []struct {
				Slug        string `json:"slug"`
				MemberCount int    `json:"member_count"`
			} `json:"items"`
			Page    int  `json:"page"`
			PerPage int  `json:"per_page"`
			Total   int  `json:"total"`
			HasMore bool `json:"has_more"`
		}
		decodeJSON(t, res, &page)
		require.Equal(t, 2, page.Total)
		require.True(t, page.HasMore)
		require.Len(t, page.Items, 1)
		require.Equal(t, "alpha", page.Items[0].Slug)

		res = b.anonymous(t).api(http.MethodGet, "/api/v1/teams?page=2&per_page=1", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		decodeJSON(t, res, &page)
		require.False(t, page.HasMore)
		require.Equal(t, "zeta-agents", page.Items[0].Slug)
		require.Equal(t, 2, page.Items[0].MemberCount)

		res = outsider.api(http.MethodGet, "/api/v1/teams?per_page=1000", nil)
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
	})
	t.Run("ShowMembersOnlyToMembers", func(t *testing.T) {
		for _, tc := range []struct {
			who     *client
			members bool
		}{{b.anonymous(t), false}, {outsider, false}, {member, true}, {owner, true}, {admin, true}} {
			res := tc.who.api(http.MethodGet, "/api/v1/teams/zeta-agents", nil)
			require.Equal(t, http.StatusOK, res.StatusCode)
			body := readBody(t, res)
			require.NotContains(t, body, "hash")
			require.NotContains(t, body, "password")
			require.Equal(t, tc.members, strings.Contains(body, `"members":[`), body)
			require.Equal(t, tc.members, strings.Contains(body, `"email":"mem@example.org"`), body)
		}
		res := outsider.api(http.MethodGet, "/api/v1/teams/nope", nil)
		require.Equal(t, http.StatusNotFound, res.StatusCode)
		require.Contains(t, readBody(t, res), `"code":"not_found"`)
	})
	t.Run("RemoveMember", func(t *testing.T) {
		path := "/api/v1/teams/zeta-agents/members/" + strconv.FormatInt(member.user.ID, 10)
		require.Equal(t, http.StatusForbidden, member.api(http.MethodDelete, "/api/v1/teams/zeta-agents/members/"+strconv.FormatInt(owner.user.ID, 10), nil).StatusCode)
		require.Equal(t, http.StatusForbidden, outsider.api(http.MethodDelete, path, nil).StatusCode)
		res := owner.api(http.MethodDelete, "/api/v1/teams/zeta-agents/members/"+strconv.FormatInt(owner.user.ID, 10), nil)
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), "last owner")
		require.Equal(t, http.StatusNoContent, owner.api(http.MethodDelete, path, nil).StatusCode)
		require.Equal(t, http.StatusNotFound, owner.api(http.MethodDelete, path, nil).StatusCode)
	})
	t.Run("AnonymousMutationsWithoutCredentials", func(t *testing.T) {
		// With neither a bearer token nor a session there are no ambient
		// credentials to forge, so the route itself answers 401.
		res := b.anonymous(t).api(http.MethodPost, "/api/v1/teams", map[string]string{"name": "Nope"})
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		require.Contains(t, readBody(t, res), `"code":"unauthorized"`)
	})
}
