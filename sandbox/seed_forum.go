package sandbox

import "time"

// The forum's seed; see the note in seed_shop.go.

// forumUser is a forum member.
type forumUser struct {
	Name   string
	Joined string
	About  string
}

// comment is a reply to a post.
type comment struct {
	ID      int
	Author  string
	Body    string
	Created time.Time
}

// forumPost is a post with its comments. Its score is the seeded score plus the
// visitor's own vote (-1, 0 or +1).
type forumPost struct {
	ID        int
	Title     string
	Author    string
	Tag       string
	Body      string
	Created   time.Time
	BaseScore int
	MyVote    int
	Comments  []*comment
}

// Score is the post's vote total.
func (p *forumPost) Score() int { return p.BaseScore + p.MyVote }

// forumState is one namespace's forum.
type forumState struct {
	posts       []*forumPost
	users       []*forumUser
	nextPost    int
	nextComment int
}

func forumTags() []string {
	return []string{"question", "discussion", "recommendation", "data", "meta"}
}

// seedForum builds a fresh forum from the seed.
func seedForum() *forumState {
	at := func(s string) time.Time {
		t, err := time.Parse(dateTimeFormat, s)
		if err != nil {
			panic(err) // the seed is a constant
		}
		return t
	}
	users := []*forumUser{
		{"alice", "2023-05-02", "Night-owl programmer."},
		{"bob", "2023-06-18", "Keyboards, coffee and cast iron."},
		{"carol", "2023-08-09", "I read the city's open data so you don't have to."},
		{"dave", "2023-11-23", "Coffee first."},
		{"erin", "2024-01-15", "Hiker and librarian."},
		{"frank", "2024-03-30", "Cyclist, camper."},
		{"mod", "2023-01-01", "Forum moderator."},
		{currentUser, "2025-03-01", "The sandbox visitor: that's you."},
	}
	type c struct{ author, body, at string }
	type p struct {
		title, author, tag, body, at string
		score                        int
		comments                     []c
	}
	seed := []p{
		{"Best desk lamp for late-night coding?", "alice", "question",
			"My eyes hurt after long evenings at the screen. Which desk lamp do you use?", "2025-03-02 09:15", 42,
			[]c{{"bob", "The Arc Desk Lamp from the shop has a warm mode, works well for me.", "2025-03-02 10:02"},
				{"carol", "Same here, the Arc Desk Lamp.", "2025-03-02 12:40"}}},
		{"The Mechanical Keyboard is worth every cent", "bob", "recommendation",
			"I bought the Mechanical Keyboard from the shop last month. The tactile switches are great and it is compact enough for my small desk. Highly recommended.",
			"2025-03-04 18:40", 57,
			[]c{{"alice", "Agreed, mine arrived in two days.", "2025-03-04 19:05"},
				{"erin", "How loud is it?", "2025-03-05 08:12"},
				{"bob", "Quieter than I expected.", "2025-03-05 09:30"}}},
		{"Travel Hammock review after three trips", "erin", "recommendation",
			"The Travel Hammock packs tiny and sets up in minutes. I recommend it for anyone who hikes.", "2025-03-06 12:05", 31,
			[]c{{"frank", "Does it come with straps?", "2025-03-06 13:00"},
				{"erin", "Yes, straps are included.", "2025-03-06 13:20"}}},
		{"French Press glass cracked after a month", "dave", "discussion",
			"The glass of my French Press 1 L cracked after a month. Has anyone else had this? Otherwise it made good coffee.",
			"2025-03-07 08:30", 18,
			[]c{{"alice", "Mine is fine so far, maybe a bad batch.", "2025-03-07 09:45"}}},
		{"Air quality in July was awful", "carol", "data",
			"According to the data portal, PM2.5 peaked in July. Was it the wildfires?", "2025-03-08 14:20", 25,
			[]c{{"dave", "Probably the heatwave too.", "2025-03-08 15:10"}}},
		{"Which bike station is the busiest?", "frank", "question",
			"I am trying to figure out where to find a free bike in the mornings. Which station sees the most trips?",
			"2025-03-09 10:00", 12,
			[]c{{"alice", "Central Station, I think.", "2025-03-09 10:20"},
				{"bob", "Check the bike share dataset on the data portal.", "2025-03-09 11:05"},
				{"carol", "Riverside has lots of stations though.", "2025-03-09 12:30"},
				{"erin", "Central Station is always empty by 8 am.", "2025-03-09 13:15"},
				{"dave", "The dataset has trips per station for 2024.", "2025-03-09 14:00"}}},
		{"Show us your desk setup", "alice", "discussion",
			"Describe your desk setup! Mine: Oak Writing Desk, Arc Desk Lamp and a Mesh Office Chair.", "2025-03-10 19:45", 88,
			[]c{{"bob", "Mechanical Keyboard plus a Wireless Mouse here.", "2025-03-10 20:10"},
				{"frank", "A bookcase behind the desk, of course.", "2025-03-10 21:00"}}},
		{"Library opening hours are changing", "erin", "discussion",
			"The Central library will open at 8 am from April.", "2025-03-11 09:00", 9, nil},
		{"Will the Noise-Cancelling Headphones go on sale?", "dave", "question",
			"They cost 199 dollars right now. Has anyone seen them cheaper?", "2025-03-12 16:10", 7,
			[]c{{"erin", "Wait for the summer sale.", "2025-03-12 17:00"}}},
		{"Tips for first-time campers", "frank", "recommendation",
			"Bring layers, test your gear at home first, and get a light tent. I recommend the Two-Person Tent from the shop.",
			"2025-03-13 07:50", 40,
			[]c{{"carol", "Great tips!", "2025-03-13 08:30"},
				{"alice", "And an Insulated Water Bottle.", "2025-03-13 09:10"}}},
		{"City budget: parks got a bigger slice", "carol", "data",
			"Parks & Recreation had the largest percentage increase in the 2024 budget.", "2025-03-14 11:30", 15,
			[]c{{"frank", "About time.", "2025-03-14 12:00"}}},
		{"Cast iron seasoning questions", "bob", "question",
			"How often should I re-season the Cast Iron Skillet?", "2025-03-15 13:25", 21,
			[]c{{"dave", "Only when food starts sticking.", "2025-03-15 14:00"},
				{"carol", "A thin layer of oil after each wash is enough.", "2025-03-15 15:30"}}},
		{"Forum rules (please read)", "mod", "meta",
			"Be kind, stay on topic, and no spam.", "2025-03-01 08:00", 33, nil},
		{"Anyone tried the Wireless Mouse?", "erin", "question",
			"Thinking of buying one. Is the battery life really 18 months?", "2025-03-17 20:05", 3,
			[]c{{"bob", "Mine has lasted a year so far.", "2025-03-17 21:00"}}},
		{"Weekly data digest #12", "carol", "data",
			"This week on the data portal: library loans for 2024 are in, and the bike share dataset was updated.",
			"2025-03-20 17:00", 11, nil},
	}
	st := &forumState{users: users}
	cid := 1
	for i, sp := range seed {
		post := &forumPost{ID: i + 1, Title: sp.title, Author: sp.author, Tag: sp.tag, Body: sp.body,
			Created: at(sp.at), BaseScore: sp.score}
		for _, sc := range sp.comments {
			post.Comments = append(post.Comments, &comment{ID: cid, Author: sc.author, Body: sc.body, Created: at(sc.at)})
			cid++
		}
		st.posts = append(st.posts, post)
	}
	st.nextPost, st.nextComment = len(seed)+1, cid
	return st
}

// post returns a post by id, or nil.
func (st *forumState) post(id int) *forumPost {
	for _, p := range st.posts {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// user returns a member by name, or nil.
func (st *forumState) user(name string) *forumUser {
	for _, u := range st.users {
		if u.Name == name {
			return u
		}
	}
	return nil
}
