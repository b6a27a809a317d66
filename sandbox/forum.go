package sandbox

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the forum's forms.
const (
	maxTitle    = 200
	maxPostBody = 5000
	maxComment  = 2000
	maxPosts    = 300 // per namespace, to bound memory
	maxComments = 1000
)

// postRow is a post as listings show it.
type postRow struct {
	*forumPost
	CommentCount int
}

// postList is the data of the post list.
type postList struct {
	Sort  string
	Tag   string
	Tags  []string
	Posts []postRow
	Base  string
	Next  string
}

// sortPosts orders posts by score (ties: newest first) or by date.
func sortPosts(posts []*forumPost, by string) []*forumPost {
	out := slices.Clone(posts)
	slices.SortStableFunc(out, func(a, b *forumPost) int {
		if by == "top" && a.Score() != b.Score() {
			return b.Score() - a.Score()
		}
		return b.Created.Compare(a.Created)
	})
	return out
}

// forumPosts lists posts, by votes (?sort=top, the default) or newest first
// (?sort=new), optionally only one ?tag=.
func (s *Server) forumPosts(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sortBy := r.URL.Query().Get("sort")
	if sortBy != "new" {
		sortBy = "top"
	}
	tag := r.URL.Query().Get("tag")
	if !slices.Contains(forumTags(), tag) {
		tag = ""
	}
	var rows []postRow
	for _, p := range sortPosts(sp.forum.posts, sortBy) {
		if tag == "" || p.Tag == tag {
			rows = append(rows, postRow{forumPost: p, CommentCount: len(p.Comments)})
		}
	}
	title := "Top posts"
	if sortBy == "new" {
		title = "New posts"
	}
	if tag != "" {
		title += " tagged " + tag
	}
	v := s.view(r, siteForum, title)
	v.Flash = takeFlash(sp)
	v.Data = postList{Sort: sortBy, Tag: tag, Tags: forumTags(), Posts: rows, Base: v.Home, Next: r.URL.RequestURI()}
	s.render(w, http.StatusOK, "forum_posts", v)
}

// postPage is the data of a post page.
type postPage struct {
	*forumPost
	Base string
	Next string
}

// forumPost shows a post with its comments and the comment form.
func (s *Server) forumPost(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	p := s.postOf(sp, r)
	if p == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such post.")
		return
	}
	v := s.view(r, siteForum, p.Title)
	v.Flash = takeFlash(sp)
	v.Data = postPage{forumPost: p, Base: v.Home, Next: r.URL.RequestURI()}
	s.render(w, http.StatusOK, "forum_post", v)
}

func (s *Server) postOf(sp *space, r *http.Request) *forumPost {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		return nil
	}
	return sp.forum.post(id)
}

// forumNew shows the new-post form.
func (s *Server) forumNew(w http.ResponseWriter, r *http.Request) {
	v := s.view(r, siteForum, "New post")
	tags := slices.DeleteFunc(forumTags(), func(t string) bool { return t == "meta" })
	v.Data = struct {
		Tags []string
		Base string
	}{tags, v.Home}
	s.render(w, http.StatusOK, "forum_new", v)
}

// forumCreate publishes a post by the visitor.
func (s *Server) forumCreate(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := parseForm(w, r); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	title := strings.TrimSpace(r.PostFormValue("title"))
	body := strings.TrimSpace(r.PostFormValue("body"))
	if title == "" || utf8.RuneCountInString(title) > maxTitle {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Give the post a title of 1 to %d characters.", maxTitle))
		return
	}
	if body == "" || utf8.RuneCountInString(body) > maxPostBody {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Write a post of 1 to %d characters.", maxPostBody))
		return
	}
	tag := r.PostFormValue("tag")
	switch {
	case tag == "":
		tag = "discussion"
	case tag == "meta" || !slices.Contains(forumTags(), tag):
		s.fail(w, r, http.StatusBadRequest, "Choose one of the offered tags.")
		return
	}
	st := sp.forum
	if len(st.posts) >= maxPosts {
		s.fail(w, r, http.StatusConflict, "This sandbox holds no more posts.")
		return
	}
	p := &forumPost{ID: st.nextPost, Title: title, Author: currentUser, Tag: tag, Body: body, Created: s.now().UTC()}
	st.nextPost++
	st.posts = append(st.posts, p)
	s.redirect(w, r, sp, fmt.Sprintf("%s/posts/%d", s.sitePath(r.PathValue("ns"), siteForum), p.ID), "Your post is live.")
}

// forumComment adds the visitor's comment to a post.
func (s *Server) forumComment(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	p := s.postOf(sp, r)
	if p == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such post.")
		return
	}
	if err := parseForm(w, r); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	body := strings.TrimSpace(r.PostFormValue("body"))
	if body == "" || utf8.RuneCountInString(body) > maxComment {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Write a comment of 1 to %d characters.", maxComment))
		return
	}
	st := sp.forum
	if st.nextComment > maxComments {
		s.fail(w, r, http.StatusConflict, "This sandbox holds no more comments.")
		return
	}
	p.Comments = append(p.Comments, &comment{ID: st.nextComment, Author: currentUser, Body: body, Created: s.now().UTC()})
	st.nextComment++
	s.redirect(w, r, sp, fmt.Sprintf("%s/posts/%d", s.sitePath(r.PathValue("ns"), siteForum), p.ID), "Your comment was added.")
}

// forumVote sets the visitor's vote on a post: direction=up or down; voting the
// same way again takes the vote back. It returns to ?next= when that is a forum
// page, else to the post.
func (s *Server) forumVote(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	p := s.postOf(sp, r)
	if p == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such post.")
		return
	}
	if err := parseForm(w, r); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	vote := 0
	switch r.PostFormValue("direction") {
	case "up":
		vote = 1
	case "down":
		vote = -1
	default:
		s.fail(w, r, http.StatusBadRequest, "Vote up or down.")
		return
	}
	msg := "Vote recorded."
	if p.MyVote == vote {
		vote, msg = 0, "Vote removed."
	}
	p.MyVote = vote
	base := s.sitePath(r.PathValue("ns"), siteForum)
	next := r.PostFormValue("next")
	if !(next == base || strings.HasPrefix(next, base+"/") || strings.HasPrefix(next, base+"?")) || strings.Contains(next, "//") {
		next = fmt.Sprintf("%s/posts/%d", base, p.ID)
	}
	s.redirect(w, r, sp, next, msg)
}

// userRow is a member with their activity.
type userRow struct {
	*forumUser
	Posts    int
	Comments int
	Karma    int
}

func (st *forumState) userRow(u *forumUser) userRow {
	row := userRow{forumUser: u}
	for _, p := range st.posts {
		if p.Author == u.Name {
			row.Posts++
			row.Karma += p.Score()
		}
		for _, c := range p.Comments {
			if c.Author == u.Name {
				row.Comments++
			}
		}
	}
	return row
}

// forumUsers lists the members.
func (s *Server) forumUsers(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var rows []userRow
	for _, u := range sp.forum.users {
		rows = append(rows, sp.forum.userRow(u))
	}
	v := s.view(r, siteForum, "Users")
	v.Data = struct {
		Users []userRow
		Base  string
	}{rows, v.Home}
	s.render(w, http.StatusOK, "forum_users", v)
}

// userComment is a comment with the post it belongs to.
type userComment struct {
	*comment
	Post *forumPost
}

// forumUser shows a member's posts and comments.
func (s *Server) forumUser(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	u := sp.forum.user(r.PathValue("name"))
	if u == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such user.")
		return
	}
	var posts []*forumPost
	var comments []userComment
	for _, p := range sortPosts(sp.forum.posts, "new") {
		if p.Author == u.Name {
			posts = append(posts, p)
		}
		for _, c := range p.Comments {
			if c.Author == u.Name {
				comments = append(comments, userComment{comment: c, Post: p})
			}
		}
	}
	slices.SortStableFunc(comments, func(a, b userComment) int { return b.Created.Compare(a.Created) })
	v := s.view(r, siteForum, u.Name)
	v.Data = struct {
		userRow
		PostList    []*forumPost
		CommentList []userComment
		Base        string
	}{sp.forum.userRow(u), posts, comments, v.Home}
	s.render(w, http.StatusOK, "forum_user", v)
}
