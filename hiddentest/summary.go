package hiddentest

// Summary is all a team may see of a hidden suite: how many tests each group
// and browser level holds. Ids, titles, steps, paths and captures stay hidden,
// so a team learns the suite's shape but nothing it could build against.
type Summary struct {
	Total   int            `json:"total"`
	Request int            `json:"request"`
	Browser BrowserSummary `json:"browser"`
	System  int            `json:"system"`
}

// BrowserSummary counts browser tests per level.
type BrowserSummary struct {
	L1 int `json:"l1"`
	L2 int `json:"l2"`
	L3 int `json:"l3"`
}

// Total is the number of browser tests.
func (b BrowserSummary) Total() int { return b.L1 + b.L2 + b.L3 }

// Summary counts the suite's tests per group and browser level.
func (s *Suite) Summary() Summary {
	var sum Summary
	for _, t := range s.Tests {
		switch t.Group {
		case GroupRequest:
			sum.Request++
		case GroupSystem:
			sum.System++
		case GroupBrowser:
			switch t.Level {
			case 1:
				sum.Browser.L1++
			case 2:
				sum.Browser.L2++
			case 3:
				sum.Browser.L3++
			default:
				continue // an invalid level; Validate refuses such suites
			}
		default:
			continue
		}
		sum.Total++
	}
	return sum
}
