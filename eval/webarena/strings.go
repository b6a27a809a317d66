package webarena

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"proctor/eval"
	"proctor/models"
)

// Reference answer kinds of string_match (eval.reference_answers keys).
const (
	RefExactMatch  = "exact_match"
	RefMustInclude = "must_include"
	RefFuzzyMatch  = "fuzzy_match"
)

// notAchievable is the reference answer WebArena gives tasks that cannot be done.
const notAchievable = "N/A"

// orSeparator separates alternatives in reference URLs and required contents.
const orSeparator = " |OR| "

// errNoJudge is the message when a fuzzy_match needs the LLM judge and there is none.
const errNoJudge = "fuzzy_match needs an LLM judge; none is configured"

// clean normalises a string as WebArena does before comparing: surrounding
// white space off, one pair of enclosing quotes off, lower case.
func clean(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 0 && ((s[0] == '\'' && s[len(s)-1] == '\'') || (s[0] == '"' && s[len(s)-1] == '"')) {
		if len(s) == 1 {
			return "" // a lone quote both starts and ends the string
		}
		s = s[1 : len(s)-1]
	}
	return strings.ToLower(s)
}

// exactMatch: the cleaned strings are equal.
func exactMatch(ref, pred string) bool { return clean(pred) == clean(ref) }

// mustInclude: the cleaned reference occurs in the cleaned prediction. With
// tokenize, a one-character reference (a count such as "0") must be a whole
// word of the prediction, so that "10" does not include "0".
func mustInclude(ref, pred string, tokenize bool) bool {
	cref, cpred := clean(ref), clean(pred)
	if tokenize && utf8.RuneCountInString(cref) == 1 && len(wordTokens(cref)) == 1 {
		for _, tok := range wordTokens(cpred) {
			if tok == cref {
				return true
			}
		}
		return false
	}
	return strings.Contains(cpred, cref)
}

// wordTokens splits text into words and punctuation the way NLTK's
// word_tokenize (which WebArena uses) does for what matters here, deciding
// whether one character stands alone: punctuation around words splits off
// (brackets, quotes, $ % & # @ ; ? !), commas and colons split unless a digit
// follows ("1,000" and "10:30" stay whole), a period splits at the end of a
// word but not inside one ("0.5"), contractions split ("0's" → "0", "'s"), and
// hyphens and slashes do not split ("0-5", "0/5").
func wordTokens(text string) []string {
	var tokens []string
	for _, chunk := range strings.Fields(text) {
		tokens = append(tokens, splitChunk(chunk)...)
	}
	return tokens
}

// alwaysSplit are characters NLTK always makes tokens of their own.
const alwaysSplit = "()[]{}<>\"`$%&#@;?!"

// contractions are the endings NLTK splits off words.
var contractions = []string{"'s", "'m", "'d", "'ll", "'re", "'ve", "n't"}

// splitChunk splits one white-space-free chunk.
func splitChunk(chunk string) []string {
	var (
		tokens []string
		word   strings.Builder
	)
	flush := func() {
		if word.Len() > 0 {
			tokens = append(tokens, splitWordEnd(word.String())...)
			word.Reset()
		}
	}
	runes := []rune(chunk)
	for i := 0; i < len(runes); i++ {
		c := runes[i]
		switch {
		case strings.ContainsRune(alwaysSplit, c):
			flush()
			tokens = append(tokens, string(c))
		case c == ',' || c == ':':
			if i+1 < len(runes) && unicode.IsDigit(runes[i+1]) {
				word.WriteRune(c)
				continue
			}
			flush()
			tokens = append(tokens, string(c))
		case c == '\'' && word.Len() == 0 && i+1 < len(runes) && !isContraction(string(runes[i:])):
			tokens = append(tokens, "'") // an opening quote
		default:
			word.WriteRune(c)
		}
	}
	flush()
	return tokens
}

// isContraction reports whether s starts with a contraction ending that is
// the whole rest of the word.
func isContraction(s string) bool {
	ls := strings.ToLower(s)
	for _, c := range contractions {
		if ls == c || (strings.HasPrefix(ls, c) && !isWordRune([]rune(ls[len(c):])[0])) {
			return true
		}
	}
	return false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// splitWordEnd splits trailing periods, closing quotes and contractions off a word.
func splitWordEnd(w string) []string {
	var tail []string
	for {
		switch {
		case len(w) > 1 && strings.HasSuffix(w, "..."):
			tail = append([]string{"..."}, tail...)
			w = strings.TrimSuffix(w, "...")
			continue
		case len(w) > 1 && (strings.HasSuffix(w, ".") || strings.HasSuffix(w, "'")):
			tail = append([]string{w[len(w)-1:]}, tail...)
			w = w[:len(w)-1]
			continue
		}
		lw := strings.ToLower(w)
		split := false
		for _, c := range contractions {
			if len(w) > len(c) && strings.HasSuffix(lw, c) {
				tail = append([]string{w[len(w)-len(c):]}, tail...)
				w = w[:len(w)-len(c)]
				split = true
				break
			}
		}
		if !split {
			break
		}
	}
	if w == "" {
		return tail
	}
	return append([]string{w}, tail...)
}

// referenceAnswers is string_match's reference_answers, decoded by kind.
type referenceAnswers struct {
	exact       *string
	mustInclude []string
	fuzzyNA     bool     // fuzzy_match is the string "N/A"
	fuzzy       []string // fuzzy_match references otherwise
}

// parseReferenceAnswers decodes reference_answers, refusing kinds it does not know.
func parseReferenceAnswers(raw json.RawMessage) (*referenceAnswers, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("string_match needs reference_answers")
	}
	var kinds map[string]json.RawMessage
	if err := json.Unmarshal(raw, &kinds); err != nil {
		return nil, fmt.Errorf("reference_answers must be an object")
	}
	if len(kinds) == 0 {
		return nil, fmt.Errorf("reference_answers is empty")
	}
	ra := &referenceAnswers{}
	for kind, v := range kinds {
		switch kind {
		case RefExactMatch:
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("reference_answers.exact_match must be a string")
			}
			ra.exact = &s
		case RefMustInclude:
			if err := json.Unmarshal(v, &ra.mustInclude); err != nil || len(ra.mustInclude) == 0 {
				return nil, fmt.Errorf("reference_answers.must_include must be a non-empty list of strings")
			}
		case RefFuzzyMatch:
			var s string
			if json.Unmarshal(v, &s) == nil {
				if s != notAchievable {
					return nil, fmt.Errorf("reference_answers.fuzzy_match must be a list of strings or %q, found the string %q", notAchievable, s)
				}
				ra.fuzzyNA = true
				continue
			}
			if err := json.Unmarshal(v, &ra.fuzzy); err != nil || len(ra.fuzzy) == 0 {
				return nil, fmt.Errorf("reference_answers.fuzzy_match must be a non-empty list of strings or %q", notAchievable)
			}
		default:
			return nil, fmt.Errorf("reference_answers.%s is not supported (WebArena knows exact_match, must_include and fuzzy_match)", kind)
		}
	}
	return ra, nil
}

// finalAnswer is the text WebArena compares: the answer action's text, or its
// structured response as JSON text; "" when the episode ended without an
// answer (WebArena's stop action with an empty answer).
func finalAnswer(final *models.Action) (string, string) {
	switch {
	case final == nil:
		return "", "the episode ended without an answer"
	case final.Type == models.ActStop:
		msg := "the agent stopped without answering"
		if final.Reason != "" {
			msg += ": " + final.Reason
		}
		return "", msg
	case final.Type != models.ActAnswer:
		return "", "the final action is not an answer"
	case final.Text != "":
		return final.Text, ""
	case len(final.Response) > 0:
		return string(final.Response), ""
	}
	return "", "the answer is empty"
}

// stringActual is what the StringEvaluator reports as its actual value.
type stringActual struct {
	Answer  string `json:"answer"`
	Cleaned string `json:"cleaned"`
	Note    string `json:"note,omitempty"`
}

// checkString is WebArena's StringEvaluator. The answer is cleaned once before
// the checks, which clean again, as WebArena does. Every reference kind must
// hold. fuzzy_match references go to the judge; an "N/A" fuzzy reference is met
// by the answer "N/A", or else by an answer the judge finds to give the
// task's string_note as the reason it cannot be done.
func (e *Evaluator) checkString(ctx context.Context, s *spec, in eval.Input) (eval.EvaluatorResult, models.Usage, error) {
	var usage models.Usage
	ra, err := parseReferenceAnswers(s.ReferenceAnswers)
	if err != nil {
		return errorResult(StringEvaluator, s.ReferenceAnswers, err.Error()), usage, nil
	}
	answer, note := finalAnswer(in.Final)
	pred := clean(answer)
	actual := stringActual{Answer: answer, Cleaned: pred, Note: note}
	var as []eval.Assertion

	if ra.exact != nil {
		ok := exactMatch(*ra.exact, pred)
		as = append(as, eval.Assertion{Name: RefExactMatch, Passed: ok,
			Message: verdictMessage(ok, fmt.Sprintf("the answer is %q", *ra.exact), fmt.Sprintf("the answer %q is not %q", pred, clean(*ra.exact)))})
	}
	tokenize := len(ra.mustInclude) == 1
	for i, ref := range ra.mustInclude {
		ok := mustInclude(ref, pred, tokenize)
		as = append(as, eval.Assertion{Name: fmt.Sprintf("%s[%d]", RefMustInclude, i), Passed: ok,
			Message: verdictMessage(ok, fmt.Sprintf("the answer includes %q", ref), fmt.Sprintf("the answer does not include %q", clean(ref)))})
	}

	// judge asks the fuzzy matcher, or explains why it cannot.
	judge := func(reference string) (bool, string, error) {
		if e.fuzzy == nil {
			return false, errNoJudge, nil
		}
		ok, u, err := e.fuzzy.FuzzyMatch(ctx, in.Task.Intent, reference, pred)
		usage.InputTokens += u.InputTokens
		usage.OutputTokens += u.OutputTokens
		usage.Cost += u.Cost
		if err != nil {
			if ctx.Err() != nil {
				return false, "", ctx.Err()
			}
			return false, "fuzzy_match judge failed: " + err.Error(), nil
		}
		return ok, "", nil
	}

	if ra.fuzzyNA {
		if exactMatch(notAchievable, pred) {
			as = append(as, eval.Assertion{Name: RefFuzzyMatch, Passed: true, Message: `the answer is "N/A"`})
		} else {
			reason, _, err := optionalString(s.StringNote, "string_note")
			switch {
			case err != nil || strings.TrimSpace(reason) == "":
				return errorResult(StringEvaluator, s.ReferenceAnswers, `fuzzy_match "N/A" needs the task's string_note (why the task cannot be done) to judge an answer other than "N/A"`), usage, nil
			case pred == "":
				as = append(as, eval.Assertion{Name: RefFuzzyMatch, Passed: false, Message: `the answer is empty, not "N/A" or a reason the task cannot be done`})
			default:
				ok, problem, err := judge(unachievableReference(reason))
				if err != nil {
					return eval.EvaluatorResult{}, usage, err
				}
				if problem != "" {
					return errorResult(StringEvaluator, s.ReferenceAnswers, problem), usage, nil
				}
				as = append(as, eval.Assertion{Name: RefFuzzyMatch, Passed: ok,
					Message: verdictMessage(ok, "the judge found the answer gives the reason the task cannot be done: "+reason,
						`the answer is not "N/A" and the judge found it does not give the reason the task cannot be done: `+reason)})
			}
		}
	}
	for i, ref := range ra.fuzzy {
		name := fmt.Sprintf("%s[%d]", RefFuzzyMatch, i)
		if pred == "" {
			// WebArena does not ask the judge about an empty answer.
			ok := ref == ""
			as = append(as, eval.Assertion{Name: name, Passed: ok, Message: verdictMessage(ok, "both are empty", "the answer is empty")})
			continue
		}
		ok, problem, err := judge(ref)
		if err != nil {
			return eval.EvaluatorResult{}, usage, err
		}
		if problem != "" {
			return errorResult(StringEvaluator, s.ReferenceAnswers, problem), usage, nil
		}
		as = append(as, eval.Assertion{Name: name, Passed: ok,
			Message: verdictMessage(ok, fmt.Sprintf("the judge found the answer means %q", ref), fmt.Sprintf("the judge found the answer does not mean %q", ref))})
	}
	return scoredResult(StringEvaluator, actual, s.ReferenceAnswers, as), usage, nil
}

// unachievableReference is the reference the judge compares an answer with
// when the task cannot be done and the answer is not literally "N/A": WebArena
// asks whether the answer refers to the annotated reason, even implicitly.
func unachievableReference(reason string) string {
	return "N/A: the task cannot be completed. Reason: " + reason
}

func verdictMessage(ok bool, pass, fail string) string {
	if ok {
		return pass
	}
	return fail
}
