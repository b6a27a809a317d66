package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"proctor/bundle"
	"proctor/vault"
)

// option is one setting, declared once in options: Load reads it, Validate
// checks it, Flags offers it on the command line and Markdown documents it.
type option struct {
	name   string // the environment variable
	flag   string // the command-line flag that overrides it; "" for none
	def    string // the default text; "" for none. $PROCTOR_DATA_DIR stands for the data folder
	defDoc string // the default as the documentation says it, where def cannot
	doc    string // what the setting does, in one line
	expect string // what a good value is; errors say "must be" and this
	// redact writes a value for an error message: nil writes it whole, an
	// empty result writes nothing (secrets).
	redact func(text string) string
	// parse stores text (never empty) in c. Its error means the text is not
	// of the expected form: errMismatch says no more, any other error is a
	// detail added in parentheses.
	parse func(c *Config, text string) error
	// check says what is wrong with the stored value, given the other
	// settings; nil checks nothing. errMismatch means "must be" and expect,
	// any other error is the whole problem ("required when …").
	check func(c *Config) error
	// show writes the stored value back as text, for Validate's messages.
	show func(c *Config) string
}

// options is the table of every setting, in the order Load reads them (a
// default may refer to a setting read before it) and the documentation
// lists them.
func options() []option {
	limits := bundle.DefaultLimits()
	forS3 := errors.New("required when " + EnvArtifactsURL + " is an s3:// URL")
	return []option{
		{name: EnvAddr, flag: "addr", def: "127.0.0.1:8080", doc: "listen address",
			expect: "host:port, such as 127.0.0.1:8080 or :8080",
			parse: func(c *Config, v string) (err error) {
				c.Addr = v
				c.BaseURL, err = parseListen(v)
				return err
			}},
		{name: EnvBaseURL, flag: "base-url", defDoc: "http:// and the listen address (localhost for a wildcard host)",
			doc:    "public origin, used in links and signed URLs",
			expect: "an http(s) origin such as https://proctor.example.org",
			parse:  func(c *Config, v string) (err error) { c.BaseURL, err = parseOrigin(v); return err }},
		{name: EnvDataDir, flag: "data-dir", def: "data", doc: "folder for the default database, artifacts and secret key",
			expect: "a folder",
			parse: func(c *Config, v string) error {
				c.DataDir, c.SecretKeyFile = v, filepath.Join(v, "secret.key")
				return nil
			}},
		{name: EnvDatabaseURL, flag: "database-url", def: "sqlite:$PROCTOR_DATA_DIR/proctor.db", doc: "the database: SQLite file or PostgreSQL",
			expect: "sqlite:relative/path.db, sqlite:///absolute/path.db or postgres://…", redact: redactURL,
			parse: func(c *Config, v string) (err error) { c.Database, err = parseDatabaseURL(v); return err }},
		{name: EnvArtifactsURL, flag: "artifacts-url", def: "file:$PROCTOR_DATA_DIR/artifacts", doc: "the artifact store: screenshots, HARs, bundles",
			expect: "file:relative/dir, file:///absolute/dir or s3://BUCKET/PREFIX",
			parse: func(c *Config, v string) error {
				loc, err := parseArtifactsURL(v)
				loc.MinFreeBytes = c.Artifacts.MinFreeBytes
				c.Artifacts = loc
				return err
			}},
		size(option{name: EnvArtifactsMinFree, doc: "free space a local artifact store needs for /readyz to answer ready (0: not checked)"},
			DefaultArtifactsMinFree, 0, 1<<50, func(c *Config) *int64 { return &c.Artifacts.MinFreeBytes }),
		text(option{name: EnvS3Endpoint, doc: "the S3-compatible store's address, path-style requests (required with an s3:// " + EnvArtifactsURL + ")",
			expect: "host[:port] without a scheme or path (use " + EnvS3UseSSL + " for TLS)",
			check: func(c *Config) error {
				switch {
				case c.Artifacts.Kind != ArtifactsS3:
					return nil
				case c.S3.Endpoint == "":
					return forS3
				case strings.Contains(c.S3.Endpoint, "/"):
					return errMismatch
				}
				return nil
			}}, func(c *Config) *string { return &c.S3.Endpoint }),
		text(option{name: EnvS3AccessKey, doc: "the S3 access key (required with an s3:// " + EnvArtifactsURL + ")", expect: "an access key", redact: hide,
			check: required(forS3, func(c *Config) bool { return c.Artifacts.Kind == ArtifactsS3 && c.S3.AccessKey == "" })},
			func(c *Config) *string { return &c.S3.AccessKey }),
		text(option{name: EnvS3SecretKey, doc: "the S3 secret key (required with an s3:// " + EnvArtifactsURL + ")", expect: "a secret key", redact: hide,
			check: required(forS3, func(c *Config) bool { return c.Artifacts.Kind == ArtifactsS3 && c.S3.SecretKey == "" })},
			func(c *Config) *string { return &c.S3.SecretKey }),
		text(option{name: EnvS3Region, def: "us-east-1", doc: "the S3 region", expect: "a region name"},
			func(c *Config) *string { return &c.S3.Region }),
		boolean(option{name: EnvS3UseSSL, doc: "whether the S3 store is reached over TLS"}, true, func(c *Config) *bool { return &c.S3.UseSSL }),
		text(option{name: EnvSecretKey, defDoc: "generated into $PROCTOR_DATA_DIR/secret.key (mode 0600)",
			doc:    "encrypts agent secrets and signs artifact URLs",
			expect: fmt.Sprintf("at least %d characters", vault.MinSecretLength), redact: hide,
			check: func(c *Config) error {
				if n := len(c.SecretKey); n > 0 && n < vault.MinSecretLength {
					return fmt.Errorf("must be at least %d characters, got %d", vault.MinSecretLength, n)
				}
				return nil
			}}, func(c *Config) *string { return &c.SecretKey }),
		{name: EnvAgentAllowHosts, doc: "hosts agents, candidates and the browser may reach although they resolve to private addresses",
			expect: "a comma list of host names or IP addresses, without scheme or port",
			parse:  func(c *Config, v string) (err error) { c.AgentAllowHosts, err = parseList(v, readHost); return err },
			show:   func(c *Config) string { return strings.Join(c.AgentAllowHosts, ",") }},
		{name: EnvTrustedProxies, doc: "proxies whose X-Forwarded-For is believed; otherwise the client address is the TCP peer",
			expect: "a comma list of IP addresses or CIDR ranges",
			parse:  func(c *Config, v string) (err error) { c.TrustedProxies, err = parseList(v, readNetwork); return err },
			show: func(c *Config) string {
				s := make([]string, len(c.TrustedProxies))
				for i, n := range c.TrustedProxies {
					s[i] = n.String()
				}
				return strings.Join(s, ",")
			}},
		{name: EnvLogLevel, def: "info", doc: "the least severe log records written", expect: "debug, info, warn or error",
			parse: func(c *Config, v string) error {
				lvl, ok := readLogLevel(v)
				c.LogLevel = lvl
				return mismatchUnless(ok)
			}},
		text(option{name: EnvLogFormat, def: "text", doc: "how log records are written", expect: "text or json",
			check: func(c *Config) error { return mismatchUnless(c.LogFormat == "text" || c.LogFormat == "json") }},
			func(c *Config) *string { return &c.LogFormat }),
		whole(option{name: EnvEpisodes, doc: "episodes this process runs at once (one Chromium, a context per episode; 0: none)"},
			2, 0, 64, func(c *Config) *int { return &c.Episodes }),
		whole(option{name: EnvRunQuota, doc: "runs a team may queue per 24 hours (0: unlimited; admins are exempt)"},
			20, 0, 1_000_000, func(c *Config) *int { return &c.RunQuota }),
		whole(option{name: EnvSubmissionQuota, doc: "bundles a team may submit per 24 hours (0: unlimited; admins are exempt)"},
			10, 0, 1_000_000, func(c *Config) *int { return &c.Submission.Quota }),
		size(option{name: EnvSubmissionMaxBytes, doc: "the largest bundle"},
			limits.MaxBundleBytes, 1<<20, 5<<40, func(c *Config) *int64 { return &c.Submission.MaxBytes }),
		size(option{name: EnvSubmissionPartBytes, doc: "the part size of resumable uploads (S3 takes no part under 5MiB but the last)"},
			16<<20, MinPartBytes, maxPartBytes, func(c *Config) *int64 { return &c.Submission.PartBytes }),
		whole(option{name: EnvSubmissionMaxFiles, doc: "files in a bundle, folders included"},
			limits.MaxFiles, 1, 100_000_000, func(c *Config) *int { return &c.Submission.Limits.MaxFiles }),
		size(option{name: EnvSubmissionMaxFileBytes, doc: "one file of a bundle, uncompressed (HARs included)"},
			limits.MaxFileBytes, 1<<10, 1<<40, func(c *Config) *int64 { return &c.Submission.Limits.MaxFileBytes }),
		decimal(option{name: EnvSubmissionMaxRatio, doc: "a bundle's uncompressed size ÷ its compressed size, for the archive and each zip entry",
			expect: "a compression ratio of at least 1, such as 100"},
			limits.MaxRatio, 1, func(c *Config) *float64 { return &c.Submission.Limits.MaxRatio }),
		duration(option{name: EnvWorkerLease, doc: "how long a worker's lease lasts unrenewed before other workers take its episodes and jobs over"},
			45*time.Second, 2*time.Second, func(c *Config) *time.Duration { return &c.WorkerLease }),
		duration(option{name: EnvEpisodeLease, doc: "how long a connecting agent's claim on an episode lasts without a heartbeat or call before the episode ends and is offered again"},
			time.Minute, time.Second, func(c *Config) *time.Duration { return &c.EpisodeLease }),
		text(option{name: EnvWorkerAddr, def: "127.0.0.1:0", doc: "where a worker process serves the connecting agents' episodes it runs to the serve processes (proctor worker only)",
			expect: "a host:port to listen on"}, func(c *Config) *string { return &c.WorkerAddr }),
		text(option{name: EnvWorkerURL, doc: "the URL serve processes reach " + EnvWorkerAddr + " at (default: http:// and the address listened on)",
			expect: "an http(s) URL such as http://worker-1:8081",
			check: func(c *Config) error {
				if c.WorkerURL == "" {
					return nil
				}
				return checkHTTPURL(c.WorkerURL, "")
			}}, func(c *Config) *string { return &c.WorkerURL }),
		duration(option{name: EnvRescueAfter, doc: "how long a job may run before River rescues it as stuck (a process that hangs while its lease is renewed)"},
			20*time.Minute, 5*time.Second, func(c *Config) *time.Duration { return &c.RescueAfter }),
		whole(option{name: EnvTeamEpisodes, doc: "episodes one team runs at once while another team's wait (0: half of the live workers' slots)"},
			0, 0, 100_000, func(c *Config) *int { return &c.TeamEpisodes }),
		whole(option{name: EnvTeamHiddenJobs, doc: "hidden-test jobs one team runs at once while another team's wait (0: half of the live workers' slots)"},
			0, 0, 100_000, func(c *Config) *int { return &c.TeamHiddenJobs }),
		whole(option{name: EnvEnvRetries, doc: "retries of an attempt whose sites failed, never charged to the agent"},
			2, 0, 10, func(c *Config) *int { return &c.EnvironmentRetries }),
		{name: EnvJudgeBaseURL, doc: `the LLM judge: an OpenAI-compatible chat-completions endpoint (none: attempts are "not judged")`,
			expect: "an http(s) URL such as https://api.openai.com/v1", redact: redactURL,
			parse: func(c *Config, v string) error { c.Judge.BaseURL = strings.TrimRight(v, "/"); return nil },
			check: func(c *Config) error {
				if c.Judge.BaseURL == "" {
					return nil
				}
				return checkHTTPURL(c.Judge.BaseURL, "set "+EnvJudgeAPIKey)
			},
			show: func(c *Config) string { return c.Judge.BaseURL }},
		text(option{name: EnvJudgeModel, doc: "the judge's model (required with " + EnvJudgeBaseURL + ")", expect: "a model name",
			check: required(errors.New("required when "+EnvJudgeBaseURL+" is set"), func(c *Config) bool { return c.Judge.BaseURL != "" && c.Judge.Model == "" })},
			func(c *Config) *string { return &c.Judge.Model }),
		text(option{name: EnvJudgeAPIKey, doc: "the judge's API key, sent as a bearer token", expect: "an API key", redact: hide},
			func(c *Config) *string { return &c.Judge.APIKey }),
		duration(option{name: EnvJudgeTimeout, doc: "how long one judge request may take"},
			2*time.Minute, time.Second, func(c *Config) *time.Duration { return &c.Judge.Timeout }),
		whole(option{name: EnvJudgeConcurrent, doc: "judge requests in flight at once, per process"},
			4, 1, 256, func(c *Config) *int { return &c.Judge.Concurrency }),
		decimal(option{name: EnvJudgeInputPrice, doc: "the judge's price of input tokens, for the cost of each judgment", expect: priceExpect},
			0, 0, func(c *Config) *float64 { return &c.Judge.InputPrice }),
		decimal(option{name: EnvJudgeOutPrice, doc: "the judge's price of output tokens, for the cost of each judgment", expect: priceExpect},
			0, 0, func(c *Config) *float64 { return &c.Judge.OutputPrice }),
	}
}

const priceExpect = "a price in US dollars per million tokens, such as 2.50"

// hide writes no value: the setting is a secret.
func hide(string) string { return "" }

// mismatchUnless is errMismatch unless ok.
func mismatchUnless(ok bool) error {
	if ok {
		return nil
	}
	return errMismatch
}

// required is a check that fails with err when missing says so.
func required(err error, missing func(c *Config) bool) func(c *Config) error {
	return func(c *Config) error {
		if missing(c) {
			return err
		}
		return nil
	}
}

// text fills o for a string held in field.
func text(o option, field func(*Config) *string) option {
	o.parse = func(c *Config, v string) error { *field(c) = v; return nil }
	o.show = func(c *Config) string { return *field(c) }
	return o
}

// boolean fills o for a boolean held in field.
func boolean(o option, def bool, field func(*Config) *bool) option {
	o.def, o.expect = strconv.FormatBool(def), "true or false"
	o.parse = func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err == nil {
			*field(c) = b
		}
		return mismatchUnless(err == nil)
	}
	o.show = func(c *Config) string { return strconv.FormatBool(*field(c)) }
	return o
}

// whole fills o for a whole number from least to most held in field.
func whole(o option, def, least, most int, field func(*Config) *int) option {
	o.def, o.expect = strconv.Itoa(def), fmt.Sprintf("a whole number from %d to %d", least, most)
	return bounded(o, field, least, most, strconv.Itoa, func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil
	})
}

// size fills o for a size in bytes from least to most held in field.
func size(o option, def, least, most int64, field func(*Config) *int64) option {
	o.def, o.expect = FormatBytes(def), fmt.Sprintf("a size from %s to %s, such as 8GiB or 16MiB", FormatBytes(least), FormatBytes(most))
	return bounded(o, field, least, most, FormatBytes, func(s string) (int64, bool) {
		n, err := ParseBytes(s)
		return n, err == nil
	})
}

// duration fills o for a duration of at least least held in field.
func duration(o option, def, least time.Duration, field func(*Config) *time.Duration) option {
	o.def = formatDuration(def)
	o.expect = fmt.Sprintf("a duration of at least %s, such as %s", formatDuration(least), o.def)
	return bounded(o, field, least, time.Duration(math.MaxInt64), formatDuration, func(s string) (time.Duration, bool) {
		d, err := time.ParseDuration(s)
		return d, err == nil
	})
}

// decimal fills o, whose expect is set, for a finite number of at least
// least held in field.
func decimal(o option, def, least float64, field func(*Config) *float64) option {
	o.def = formatFloat(def)
	return bounded(o, field, least, math.MaxFloat64, formatFloat, readFloat)
}

// bounded fills o's parse, check and show for a number held in field: read
// turns text into a number, write turns it back, and a number outside
// [least, most] is refused.
func bounded[T int | int64 | float64 | time.Duration](o option, field func(*Config) *T, least, most T, write func(T) string, read func(string) (T, bool)) option {
	o.parse = func(c *Config, v string) error {
		n, ok := read(v)
		if ok {
			*field(c) = n
		}
		return mismatchUnless(ok)
	}
	o.check = func(c *Config) error {
		n := *field(c)
		return mismatchUnless(n >= least && n <= most) // NaN is refused too
	}
	o.show = func(c *Config) string { return write(*field(c)) }
	return o
}

// formatDuration writes a duration as it would be typed: 20m, not 20m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// defaultText is o's default with references to settings read before it
// expanded from texts; a folder reference is cleaned, so that a default
// never gains a double slash.
func (o option) defaultText(texts map[string]string) string {
	if !strings.Contains(o.def, "$") {
		return o.def
	}
	return os.Expand(o.def, func(name string) string { return filepath.Clean(texts[name]) })
}

// fault describes a bad value of o: text is the value as given, err what
// parse (parsing) or check said of it.
func (o option) fault(text string, err error, parsing bool) *Error {
	e := &Error{Name: o.name, Value: text}
	if o.redact != nil {
		e.Value = o.redact(text)
	}
	switch {
	case errors.Is(err, errMismatch):
		e.Problem = "must be " + o.expect
	case parsing:
		e.Problem = "must be " + o.expect + " (" + err.Error() + ")"
	default:
		e.Problem = err.Error()
	}
	return e
}
