package storage

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"proctor/models"
)

// AttemptSteps returns an attempt with its task's public fields and its steps
// in order, in one query for the steps: what the timeline's per-step endpoints
// and its artifact download read. ENOTFOUND when the attempt is missing or its
// run is not visible to the caller.
func (db *DB) AttemptSteps(ctx context.Context, attemptID int64) (*models.AttemptSteps, error) {
	q := db.q(ctx)
	notFound := models.Errorf(models.ENOTFOUND, "Attempt %d not found.", attemptID)
	var attempts []models.Attempt
	if err := q.Where("id = ?", attemptID).Limit(1).Find(&attempts).Error; err != nil {
		return nil, wrap(err, "attempt")
	}
	if len(attempts) == 0 {
		return nil, notFound
	}
	out := &models.AttemptSteps{Attempt: attempts[0]}
	if _, _, err := db.runAccess(ctx, q, out.Attempt.RunID, false); err != nil {
		if models.ErrorCode(err) == models.ENOTFOUND {
			return nil, notFound
		}
		return nil, err
	}
	var tasks []models.Task
	if err := q.Table("tasks t").Select(publicTaskColumns).Where("t.id = ?", out.Attempt.TaskID).Find(&tasks).Error; err != nil {
		return nil, wrap(err, "task")
	}
	if len(tasks) != 1 {
		return nil, notFound
	}
	out.Task = tasks[0]
	out.Task.HideSecrets()
	if err := q.Where("attempt_id = ?", attemptID).Order("step_index").Find(&out.Steps).Error; err != nil {
		return nil, wrap(err, "steps")
	}
	return out, nil
}

// AttemptExpectedAnswer returns what the attempt's task expects of its final
// answer (models.ExpectedAnswerOf), or nil when the task states none. It reads
// the task's hidden fields, so it is for administrators only: EUNAUTHORIZED or
// EFORBIDDEN for anyone else, ENOTFOUND for a missing attempt.
func (db *DB) AttemptExpectedAnswer(ctx context.Context, attemptID int64) (*models.ExpectedAnswer, error) {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return nil, err
	}
	var tasks []models.Task
	err := db.q(ctx).Table("tasks t").Select("t.id, t.eval_spec, t.reference_answers").
		Joins("JOIN attempts a ON a.task_id = t.id").Where("a.id = ?", attemptID).Find(&tasks).Error
	if err != nil {
		return nil, wrap(err, "task")
	}
	if len(tasks) != 1 {
		return nil, models.Errorf(models.ENOTFOUND, "Attempt %d not found.", attemptID)
	}
	return models.ExpectedAnswerOf(tasks[0]), nil
}

// MaxHARBytes caps how much of a HAR the timeline reads; a larger one is an
// error rather than an unbounded read.
const MaxHARBytes = 512 << 20

// harEntry is the part of a HAR entry the timeline lists. Fields not named
// here (headers, bodies) are skipped by the decoder without being kept.
type harEntry struct {
	StartedDateTime string  `json:"startedDateTime"`
	Time            float64 `json:"time"`
	Request         struct {
		Method string `json:"method"`
		URL    string `json:"url"`
	} `json:"request"`
	Response *struct {
		Status  int `json:"status"`
		Content struct {
			MimeType string `json:"mimeType"`
		} `json:"content"`
	} `json:"response"`
}

// ReadHARRequests reads the requests of a HAR document (log.entries) one
// entry at a time, in file order. Entries without a readable start time are
// left out, since they cannot be placed on a step. A document that is not a
// HAR, truncated or larger than MaxHARBytes is an error saying which.
func ReadHARRequests(r io.Reader) ([]models.NetworkRequest, error) {
	var out []models.NetworkRequest
	err := walkHAR(r, harVisitor{
		entry: func(dec *json.Decoder) error {
			var e harEntry
			if err := dec.Decode(&e); err != nil {
				return err
			}
			started, ok := harTime(e.StartedDateTime)
			if !ok {
				return nil
			}
			req := models.NetworkRequest{Started: started, Method: e.Request.Method, URL: e.Request.URL, DurationMS: max(e.Time, 0)}
			if e.Response != nil {
				req.Status, req.MIMEType = e.Response.Status, e.Response.Content.MimeType
			}
			out = append(out, req)
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FilterHAR copies a HAR document from r to w keeping only the entries whose
// start time keep accepts (entries without a readable start time are
// dropped); everything else (pages, creator, other members) is copied as it
// is. It returns how many entries it dropped.
func FilterHAR(w io.Writer, r io.Reader, keep func(started time.Time) bool) (int, error) {
	bw := bufio.NewWriter(w)
	dropped := 0
	wrote := map[int]bool{} // per nesting level: whether a member was written, for commas
	comma := func(level int) {
		if wrote[level] {
			bw.WriteByte(',')
		}
		wrote[level] = true
	}
	member := func(level int, key string) {
		comma(level)
		k, _ := json.Marshal(key)
		bw.Write(k)
		bw.WriteByte(':')
	}
	err := walkHAR(r, harVisitor{
		open:  func() { bw.WriteByte('{') },
		close: func() { bw.WriteByte('}') },
		other: func(level int, key string, raw json.RawMessage) error {
			member(level, key)
			_, err := bw.Write(raw)
			return err
		},
		enterLog: func() {
			member(0, "log")
			bw.WriteByte('{')
		},
		leaveLog: func() { bw.WriteByte('}') },
		enterEntries: func() {
			member(1, "entries")
			bw.WriteByte('[')
		},
		leaveEntries: func() { bw.WriteByte(']') },
		entry: func(dec *json.Decoder) error {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			var head struct {
				StartedDateTime string `json:"startedDateTime"`
			}
			_ = json.Unmarshal(raw, &head)
			if t, ok := harTime(head.StartedDateTime); !ok || !keep(t) {
				dropped++
				return nil
			}
			comma(2)
			_, err := bw.Write(raw)
			return err
		},
	})
	if err != nil {
		return dropped, err
	}
	return dropped, bw.Flush()
}

// harTime parses a HAR startedDateTime (ISO 8601 with an offset).
func harTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// harVisitor is told what walkHAR meets. Members other than log and
// log.entries go to other (level 0 for the document, 1 for log); each entry is
// decoded by entry from the decoder. Nil hooks are skipped.
type harVisitor struct {
	open, close          func()
	enterLog, leaveLog   func()
	enterEntries         func()
	leaveEntries         func()
	other                func(level int, key string, raw json.RawMessage) error
	entry                func(dec *json.Decoder) error
	entriesSeen, logSeen bool
}

func (v *harVisitor) call(f func()) {
	if f != nil {
		f()
	}
}

// walkHAR stream-decodes a HAR document, one entry at a time, so that a large
// log never sits in memory whole.
func walkHAR(r io.Reader, v harVisitor) error {
	lim := &io.LimitedReader{R: r, N: MaxHARBytes + 1}
	dec := json.NewDecoder(lim)
	err := v.document(dec)
	if lim.N <= 0 {
		return fmt.Errorf("the HAR is larger than the %d MiB limit", MaxHARBytes>>20)
	}
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("the HAR is truncated or empty")
		}
		return fmt.Errorf("read HAR: %w", err)
	}
	if !v.logSeen {
		return errors.New("not a HAR: the JSON object has no log")
	}
	return nil
}

func (v *harVisitor) document(dec *json.Decoder) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	v.call(v.open)
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return err
		}
		if key != "log" || v.logSeen {
			if err := v.skip(dec, 0, key); err != nil {
				return err
			}
			continue
		}
		v.logSeen = true
		v.call(v.enterLog)
		if err := v.log(dec); err != nil {
			return err
		}
		v.call(v.leaveLog)
	}
	if err := expectDelim(dec, '}'); err != nil {
		return err
	}
	v.call(v.close)
	return nil
}

func (v *harVisitor) log(dec *json.Decoder) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return err
		}
		if key != "entries" || v.entriesSeen {
			if err := v.skip(dec, 1, key); err != nil {
				return err
			}
			continue
		}
		v.entriesSeen = true
		if err := expectDelim(dec, '['); err != nil {
			return err
		}
		v.call(v.enterEntries)
		for dec.More() {
			if v.entry == nil {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return err
				}
				continue
			}
			if err := v.entry(dec); err != nil {
				return err
			}
		}
		if err := expectDelim(dec, ']'); err != nil {
			return err
		}
		v.call(v.leaveEntries)
	}
	return expectDelim(dec, '}')
}

// skip reads one member's value and hands it to other.
func (v *harVisitor) skip(dec *json.Decoder, level int, key string) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	if v.other == nil {
		return nil
	}
	return v.other(level, key, raw)
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("not a HAR: expected %q, found %v", string(want), tok)
	}
	return nil
}

func objectKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("not a HAR: expected an object key, found %v", tok)
	}
	return key, nil
}
