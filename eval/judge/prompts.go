package judge

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"proctor/models"
)

// promptFiles holds the judges' prompt templates, one file per version:
// prompts/<name>-v<N>.md. A changed prompt is a new file with the next version,
// so that verdicts recorded under an older version stay explained by its text.
//
//go:embed prompts/*.md
var promptFiles embed.FS

// Names of the prompts the judges use, and the versions in use.
const (
	PromptTrajectory = "trajectory"
	PromptRubric     = "rubric"
	PromptFuzzyMatch = "fuzzy-match"
	PromptLabels     = "labels" // every AgentRewardBench label and the score, for studies

	TrajectoryVersion = PromptTrajectory + "-v2"
	RubricVersion     = PromptRubric + "-v2"
	FuzzyMatchVersion = PromptFuzzyMatch + "-v2"
	LabelsVersion     = PromptLabels + "-v1"
)

// Prompt is one stored prompt template: Version is its file name without
// ".md" (such as "trajectory-v2"), SHA256 the hex digest of Text.
type Prompt struct {
	Name    string
	Version string
	SHA256  string
	Text    string
}

// Prompts lists every stored prompt template, by name and then version, for
// the platform to show next to the verdicts that cite them.
func Prompts() []Prompt {
	entries, err := fs.ReadDir(promptFiles, "prompts")
	if err != nil {
		return nil // the directory is embedded at build time; it cannot be missing
	}
	var out []Prompt
	for _, e := range entries {
		name, ok := promptName(e.Name())
		if !ok {
			continue
		}
		data, err := promptFiles.ReadFile(path.Join("prompts", e.Name()))
		if err != nil {
			continue
		}
		sum := sha256.Sum256(data)
		out = append(out, Prompt{Name: name, Version: strings.TrimSuffix(e.Name(), ".md"), SHA256: hex.EncodeToString(sum[:]), Text: string(data)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return versionNumber(out[i].Version) < versionNumber(out[j].Version)
	})
	return out
}

// promptName returns <name> of a file named <name>-v<N>.md.
func promptName(file string) (string, bool) {
	version, ok := strings.CutSuffix(file, ".md")
	i := strings.LastIndex(version, "-v")
	if !ok || i <= 0 || versionNumber(version) < 1 {
		return "", false
	}
	return version[:i], true
}

// versionNumber is N of "<name>-vN", 0 when there is none.
func versionNumber(version string) int {
	i := strings.LastIndex(version, "-v")
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(version[i+2:])
	if err != nil {
		return 0
	}
	return n
}

// prompt is a parsed template with the identity recorded in verdicts. Each
// file defines a "system" and a "user" template.
type prompt struct {
	Prompt
	tmpl *template.Template
}

// loadPrompts parses the prompt versions the judges use, by name, and the
// versions a study's judge configurations may choose (models.StudyPrompts),
// by version.
func loadPrompts() (inUse, study map[string]*prompt, err error) {
	stored := map[string]Prompt{}
	for _, p := range Prompts() {
		stored[p.Version] = p
	}
	parsed := map[string]*prompt{}
	load := func(version string) (*prompt, error) {
		if p, ok := parsed[version]; ok {
			return p, nil
		}
		p, ok := stored[version]
		if !ok {
			return nil, fmt.Errorf("judge: prompt %s is not stored", version)
		}
		tmpl, err := template.New(version).Option("missingkey=error").Funcs(template.FuncMap{"json": quoted}).Parse(p.Text)
		if err != nil {
			return nil, fmt.Errorf("judge: parse prompt %s: %w", version, err)
		}
		for _, part := range []string{"system", "user"} {
			if tmpl.Lookup(part) == nil {
				return nil, fmt.Errorf("judge: prompt %s defines no %q template", version, part)
			}
		}
		parsed[version] = &prompt{Prompt: p, tmpl: tmpl}
		return parsed[version], nil
	}
	inUse, study = map[string]*prompt{}, map[string]*prompt{}
	for _, version := range []string{TrajectoryVersion, RubricVersion, FuzzyMatchVersion} {
		p, err := load(version)
		if err != nil {
			return nil, nil, err
		}
		inUse[p.Name] = p
	}
	for _, version := range models.StudyPrompts() {
		p, err := load(version)
		if err != nil {
			return nil, nil, err
		}
		study[version] = p
	}
	return inUse, study, nil
}

// render executes the prompt's system and user templates on data. It picks
// data's boundary first when there is none yet, or when the untrusted data
// happens to contain it, so that the data can never close its own block.
func (p *prompt) render(data *promptData) (system, user string, err error) {
	for data.Boundary == "" || strings.Contains(data.untrusted(), data.Boundary) {
		data.Boundary = rand.Text()
	}
	var b bytes.Buffer
	if err := p.tmpl.ExecuteTemplate(&b, "system", data); err != nil {
		return "", "", fmt.Errorf("render prompt %s: %w", p.Version, err)
	}
	system = strings.TrimSpace(b.String())
	b.Reset()
	if err := p.tmpl.ExecuteTemplate(&b, "user", data); err != nil {
		return "", "", fmt.Errorf("render prompt %s: %w", p.Version, err)
	}
	return system, strings.TrimSpace(b.String()), nil
}

// promptData is what the templates may use; each uses its own part.
type promptData struct {
	Intent string
	// Boundary marks the block of untrusted data (what the agent and the web
	// pages wrote): random for each request, so that the data cannot forge
	// the line that ends its block, and named in the instructions.
	Boundary string
	// Trajectory: the rendered steps, how many there were and were shown, and
	// how the episode ended.
	Steps      string
	StepsTotal int
	StepsShown int
	Shortened  bool
	Ending     string
	Images     int
	// Accessibility says the steps carry their pages' accessibility text.
	Accessibility bool
	// Rubric: the items to judge.
	Items []promptItem
	// Fuzzy match: the reference and the agent's answer.
	Reference string
	Answer    string
}

// untrusted is everything in data that the agent or a web page wrote: the
// text the templates put inside the data block.
func (d *promptData) untrusted() string {
	return strings.Join([]string{d.Steps, d.Ending, d.Answer}, "\n")
}

// quoted renders s as a JSON string: one line, quotes and newlines escaped,
// so that a value cannot pass for the prompt's own lines.
func quoted(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string into a buffer cannot fail
	return strings.TrimSuffix(b.String(), "\n")
}

// promptItem is one rubric item as the rubric prompt lists it.
type promptItem struct {
	Key          string
	Requirement  string
	Verification string
}
