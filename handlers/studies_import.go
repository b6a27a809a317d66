package handlers

import (
	"context"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/agreement"
	"proctor/models"
	"proctor/web"
)

// Routes of the import forms, which take an uploaded file.
const (
	studyImportLabelsRoute   = "/studies/:id/import/labels"
	studyImportVerdictsRoute = "/studies/:id/import/verdicts"
)

// maxStudyImportBytes caps an imported labels or verdicts file: an
// AgentRewardBench annotations.csv of every trajectory is a few hundred
// kilobytes, so this leaves room for large studies and nothing more.
const maxStudyImportBytes = 10 << 20

// studyImportOverhead is what a multipart form adds around the file: the
// boundaries, the CSRF token and the small fields.
const studyImportOverhead = 64 << 10

// isStudyImport reports whether a request posts a study import form, whose
// body limitStudyImportBody caps.
func isStudyImport(c echo.Context) bool {
	if c.Request().Method != http.MethodPost {
		return false
	}
	p := strings.TrimSuffix(c.Request().URL.Path, "/")
	return strings.HasPrefix(p, web.StudiesPath+"/") &&
		(strings.HasSuffix(p, "/import/labels") || strings.HasSuffix(p, "/import/verdicts"))
}

// limitStudyImportBody refuses an import whose declared size is over the
// limit with a message that says the limit, before anything is read, and
// caps what is read of the rest.
func (s *Server) limitStudyImportBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !isStudyImport(c) {
			return next(c)
		}
		req := c.Request()
		if req.ContentLength > maxStudyImportBytes+studyImportOverhead {
			return tooLargeStudyImport()
		}
		req.Body = http.MaxBytesReader(c.Response(), req.Body, maxStudyImportBytes+studyImportOverhead)
		return next(c)
	}
}

func tooLargeStudyImport() error {
	return &models.Error{Code: models.ETOOLARGE, Field: "file",
		Message: fmt.Sprintf("The file is larger than %d MiB: split it and import the parts one after the other.", maxStudyImportBytes>>20)}
}

// studyUpload is an import form's file, opened, with its options.
type studyUpload struct {
	name   string // the file's base name, which messages cite
	file   multipart.File
	skip   bool
	format string // verdicts: "csv", "jsonl" or "" (by the name)
}

// readStudyUpload opens the form's file; a missing or oversized file is an
// error naming the field.
func readStudyUpload(c echo.Context) (*studyUpload, error) {
	fh, err := c.FormFile("file")
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, tooLargeStudyImport()
	case errors.Is(err, http.ErrMissingFile):
		return nil, models.FieldError("file", "Choose the file to import.")
	case err != nil:
		return nil, &models.Error{Code: models.EINVALID, Field: "file", Message: "The upload could not be read: send the form as multipart/form-data with the file.", Err: err}
	case fh.Size > maxStudyImportBytes:
		return nil, tooLargeStudyImport()
	}
	f, err := fh.Open()
	if err != nil {
		return nil, fmt.Errorf("open uploaded import: %w", err)
	}
	// Browsers send a base name; old ones sent a Windows path.
	name := path.Base(strings.ReplaceAll(fh.Filename, `\`, "/"))
	return &studyUpload{name: name, file: f, skip: c.FormValue("skip_bad_rows") != "", format: strings.TrimSpace(c.FormValue("format"))}, nil
}

// readOptions are the reader's options for the upload.
func (u *studyUpload) readOptions() agreement.ReadOptions {
	return agreement.ReadOptions{Name: u.name, SkipBadRows: u.skip}
}

// skippedRows words the rows a reader left out.
func skippedRows(rows []agreement.RowError) []string {
	out := make([]string, 0, min(len(rows), maxSkippedShown+1))
	for i, r := range rows {
		if i == maxSkippedShown {
			out = append(out, fmt.Sprintf("… and %d more bad rows", len(rows)-maxSkippedShown))
			break
		}
		out = append(out, r.String())
	}
	return out
}

// maxSkippedShown caps the bad rows an import lists: a file of a million bad
// rows is said to be one in a page of reasonable size.
const maxSkippedShown = 100

// badRowHint adds to a bad row's message how to get past it.
func badRowHint(err error) error {
	if !errors.Is(err, agreement.ErrBadRow) {
		return err
	}
	var me *models.Error
	if !errors.As(err, &me) {
		return err
	}
	cp := *me
	cp.Message = strings.TrimSuffix(me.Message, ".") + `. Correct the row, or tick "Skip bad rows" to import the others and list the bad ones.`
	return &cp
}

// importStudyLabels imports human labels in AgentRewardBench's
// annotations.csv layout and shows what was imported on the overview.
func (s *Server) importStudyLabels(c echo.Context) error {
	return s.importStudyFile(c, web.StudySectionImportLabels, func(u *studyUpload) ([]models.StudyImportRow, []agreement.RowError, error) {
		humans, skipped, err := agreement.ReadHumanCSV(u.file, u.readOptions())
		if err != nil {
			return nil, nil, err
		}
		return untextRows(agreement.HumanImportRows(humans)), skipped, nil
	}, s.deps.Studies.ImportStudyLabels)
}

// importStudyVerdicts imports judge verdicts from CSV or JSON Lines.
func (s *Server) importStudyVerdicts(c echo.Context) error {
	return s.importStudyFile(c, web.StudySectionImportVerdicts, func(u *studyUpload) ([]models.StudyImportRow, []agreement.RowError, error) {
		var verdicts []agreement.Verdict
		var skipped []agreement.RowError
		var err error
		switch verdictFormat(u) {
		case "jsonl":
			verdicts, skipped, err = agreement.ReadVerdictsJSONL(u.file, u.readOptions())
		case "csv":
			verdicts, skipped, err = agreement.ReadVerdictsCSV(u.file, u.readOptions())
			if err == nil {
				return untextRows(agreement.VerdictImportRows(verdicts)), skipped, nil
			}
		default:
			return nil, nil, models.FieldError("format", "The format must be csv or jsonl.")
		}
		if err != nil {
			return nil, nil, err
		}
		return agreement.VerdictImportRows(verdicts), skipped, nil
	}, s.deps.Studies.ImportStudyVerdicts)
}

// untextRows undoes the formula guard of Proctor's own CSV exports
// (csvSafeHumans), so that an exported file imports back onto its items.
func untextRows(rows []models.StudyImportRow) []models.StudyImportRow {
	for i := range rows {
		rows[i].Model, rows[i].Who = csvUntext(rows[i].Model), csvUntext(rows[i].Who)
	}
	return rows
}

// verdictFormat is the format chosen on the form, else the one the file's
// name says (.jsonl and .ndjson are JSON Lines, anything else CSV).
func verdictFormat(u *studyUpload) string {
	if u.format != "" {
		return u.format
	}
	switch strings.ToLower(path.Ext(u.name)) {
	case ".jsonl", ".ndjson":
		return "jsonl"
	}
	return "csv"
}

// importStudyFile reads the uploaded file with read and stores its rows with
// store; the overview then shows what was imported, or the refusal in the
// import form's section.
func (s *Server) importStudyFile(c echo.Context, section string,
	read func(*studyUpload) ([]models.StudyImportRow, []agreement.RowError, error),
	store func(ctx context.Context, studyID int64, rows []models.StudyImportRow) (*models.StudyImportResult, error),
) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	// Only the study's managers import: others are refused before their file
	// is parsed.
	view, err := s.deps.Studies.StudyOverview(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if !view.CanManage {
		return s.studyActionError(c, section, models.Errorf(models.EFORBIDDEN, "Only the study's owner and administrators may do this."), web.StudyPageView{})
	}
	u, err := readStudyUpload(c)
	if err != nil {
		return s.studyActionError(c, section, err, web.StudyPageView{})
	}
	defer u.file.Close()
	rows, skipped, err := read(u)
	if err != nil {
		return s.studyActionError(c, section, badRowHint(err), web.StudyPageView{})
	}
	res, err := store(c.Request().Context(), id, rows)
	if err != nil {
		return s.studyActionError(c, section, err, web.StudyPageView{})
	}
	res.Skipped = len(skipped)
	kind := "labels"
	if section == web.StudySectionImportVerdicts {
		kind = "verdicts"
	}
	return s.renderStudy(c, http.StatusOK, web.StudyPageView{
		Import: &web.StudyImportView{Kind: kind, File: u.name, Result: *res, Skipped: skippedRows(skipped)},
	})
}
